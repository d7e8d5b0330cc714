import contextlib
import os

try:
    os.fork()
    print("FORK allowed", flush=True)
except OSError as exc:
    print("FORK denied", exc.errno, flush=True)
    raise SystemExit(0) from None
# Only reached without seccomp: every process keeps forking.
while True:
    with contextlib.suppress(OSError):
        os.fork()
