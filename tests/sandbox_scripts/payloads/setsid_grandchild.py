import contextlib
import os
import time

try:
    pid = os.fork()
except OSError as exc:
    print("FORK denied", exc.errno, flush=True)
    raise SystemExit(0) from None
if pid == 0:
    os.setsid()
    if os.fork() == 0:
        for fd in range(3, 256):
            with contextlib.suppress(OSError):
                os.close(fd)
        os.dup2(os.open("/dev/null", os.O_RDWR), 0)
        os.dup2(0, 1)
        os.dup2(0, 2)
        import signal
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        time.sleep(1000)
    os._exit(0)
os.waitpid(pid, 0)
print("DAEMON started", flush=True)
