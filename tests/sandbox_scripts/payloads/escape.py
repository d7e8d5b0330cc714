"""Tries to reach things outside the sandbox; prints RESULT <json> of what happened."""

import ctypes
import json
import os
import socket


def attempt(fn):
    try:
        value = fn()
    except Exception as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    return {"ok": True, "value": value}


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read(1 << 16)


params = json.loads(read(os.path.join(JOB_DIR, "params.json")))  # noqa: F821 (harness global)
out = {}


def connect():
    s = socket.create_connection(("127.0.0.1", params["port"]), timeout=2)
    s.sendall(b"leak")
    s.close()
    return "connected"


out["connect"] = attempt(connect)
out["secret"] = attempt(lambda: read(params["secret"]))
ppid = os.getppid()
out["ppid_environ"] = attempt(lambda: read(f"/proc/{ppid}/environ", "rb").decode())
out["init_environ"] = attempt(lambda: read("/proc/1/environ", "rb").decode())
out["own_environ"] = dict(os.environ)
out["ppid_mem"] = attempt(lambda: len(read(f"/proc/{ppid}/mem", "rb")))
for i, path in enumerate(params["write_targets"]):
    def write(path=path):
        with open(path, "w") as f:
            f.write("escaped")
        return path
    out[f"write_{i}"] = attempt(write)
libc = ctypes.CDLL(None, use_errno=True)


def ptrace():
    if libc.ptrace(0x4206, ppid, 0, 0) != 0:  # PTRACE_SEIZE (attach without stopping)
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return "attached"


out["ptrace"] = attempt(ptrace)
out["root_listing"] = attempt(lambda: sorted(os.listdir("/")))
out["visible"] = [p for p in params["hidden"] if os.path.exists(p)]
print("RESULT " + json.dumps(out), flush=True)
