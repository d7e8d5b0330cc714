"""The image's HEALTHCHECK: is `jaxjudge serve` answering on the port it was given?

The port is the one the container's main process (pid 1, `serve` after the entrypoint's exec;
another pid as the one argument) was started with: `--port` on its command line, else its
JAXJUDGE_PORT, else 8000. So `docker run IMAGE --port 9000` and `-e JAXJUDGE_PORT=9000` are
checked where they listen. A container running another command (grade-set, worker) has no HTTP
service to check: healthy.
"""

from __future__ import annotations

import os
import sys
import urllib.request


def _main_process(pid: str) -> tuple[list[str], dict[str, str]]:
    """The process's argv and environment (ours, if its /proc entry cannot be read)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0") if a]
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = [e.decode().partition("=") for e in f.read().split(b"\0") if e]
        return argv, {k: v for k, _, v in pairs}
    except OSError:
        return [], dict(os.environ)


def _option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def main() -> int:
    argv, env = _main_process(sys.argv[1] if len(sys.argv) > 1 else "1")
    serving = "serve" in argv and any(os.path.basename(a) == "jaxjudge" for a in argv)
    if argv and not serving:
        return 0
    port = _option(argv, "--port") or env.get("JAXJUDGE_PORT") or "8000"
    host = _option(argv, "--host") or env.get("JAXJUDGE_HOST") or "127.0.0.1"
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/healthz", timeout=4) as resp:
            return 0 if resp.status == 200 else 1
    except OSError as exc:
        print(f"unhealthy: http://{host}:{port}/healthz: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
