"""The child-side code run before the payload: `_TRAMPOLINE` (root side: cgroup, mounts,
rlimits, uid drop, exec of bubblewrap or the interpreter) and `_ENTER` (inside: seccomp, then the
script). Both snippets run in fresh interpreters and must not import the grader, so they are
strings here, passed with `python -c`; no untrusted byte runs before they have set every layer.
"""

from __future__ import annotations

# Runs as root (or the service user) with `python -I -S`, before any sandboxing is in place.
_TRAMPOLINE = r"""
import ctypes, json, os, resource, sys
spec = json.loads(sys.argv[1])
sfd = spec["status_fd"]
def fail(msg):
    try:
        os.write(sfd, ("E:" + msg)[:4000].encode("utf-8", "replace"))
    finally:
        os._exit(125)
try:
    libc = ctypes.CDLL(None, use_errno=True)
    for path in spec["cgroup_procs"]:
        with open(path, "w") as f:
            f.write(str(os.getpid()))
    if spec.get("unshare_ipc"):
        # A private SysV IPC namespace: whatever the run creates dies with its last process.
        # Best effort (a container may withhold CAP_SYS_ADMIN): the parent then removes what
        # the run's uid left in the shared one.
        libc.unshare(0x08000000)  # CLONE_NEWIPC
    ov = spec["overlay"]
    if ov:
        def mount(src, dst, fstype, flags, data):
            enc = lambda s: s.encode() if s is not None else None
            if libc.mount(enc(src), enc(dst), enc(fstype), ctypes.c_ulong(flags), enc(data)):
                e = ctypes.get_errno()
                raise OSError(e, "mount %s on %s: %s" % (src, dst, os.strerror(e)))
        if libc.unshare(0x00020000):
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
        mount(None, "/", None, 0x4000 | 0x40000, None)  # MS_REC | MS_PRIVATE
        fds = {src: os.open(src, os.O_PATH | os.O_CLOEXEC) for src, _ in ov["binds"]}
        for top in ov["tops"]:
            mount("tmpfs", top, "tmpfs", 0x2 | 0x4, "mode=0755,size=1m")  # nosuid, nodev
        for src, is_dir in ov["binds"]:
            if is_dir:
                os.makedirs(src, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(src), exist_ok=True)
                os.close(os.open(src, os.O_CREAT | os.O_WRONLY, 0o644))
            mount("/proc/self/fd/%d" % fds[src], src, None, 0x1000 | 0x4000, None)  # BIND|REC
            os.close(fds[src])
    for res, soft, hard in spec["rlimits"]:
        resource.setrlimit(res, (soft, hard))
    if spec["uid"] is not None:
        os.setgroups([])
        os.setresgid(spec["gid"], spec["gid"], spec["gid"])
        os.setresuid(spec["uid"], spec["uid"], spec["uid"])
    if libc.prctl(1, 9, 0, 0, 0):  # PR_SET_PDEATHSIG(SIGKILL): reset by setuid, so set it now
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if spec["cwd"]:
        os.chdir(spec["cwd"])
    argv = spec["argv"]
    os.execv(argv[0], argv)
except BaseException as exc:
    fail("trampoline: %s: %s" % (type(exc).__name__, exc))
"""

# Runs as `python -I -c _ENTER <bpf-hex|-> <status-fd> <script> <job_dir>` inside the sandbox.
_ENTER = r"""
import os, sys
_bpf, _sfd, _script = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if _bpf != "-":
    import ctypes
    class _Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    _raw = bytes.fromhex(_bpf)
    _buf = ctypes.create_string_buffer(_raw, len(_raw))
    _prog = _Prog(len(_raw) // 8, ctypes.cast(_buf, ctypes.c_void_p))
    _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.prctl(38, 1, 0, 0, 0) or _libc.syscall(317, 1, 1, ctypes.byref(_prog)):
        os.write(_sfd, b"E:seccomp install failed: errno %d" % ctypes.get_errno())
        os._exit(125)
    del _Prog, _raw, _buf, _prog, _libc
os.write(_sfd, b"R")
os.close(_sfd)
sys.argv = sys.argv[3:]
del _bpf, _sfd
# The parent's folders that hold jax and numpy (isolation.bwrap.package_dirs), which -I or a
# .pth outside the mounts would otherwise hide.
sys.path.extend(p for p in os.environ.get("JAXJUDGE_STAGE_PATH", "").split(os.pathsep)
                if p and p not in sys.path)
# Through the import machinery, not runpy.run_path: that compiles the source on every run
# (~18 ms for trace.py, on the grade's critical path), where this reads the bytecode compiled
# at install time, beside the read-only source.
import importlib.util
_spec = importlib.util.spec_from_file_location("__main__", _script)
_main = importlib.util.module_from_spec(_spec)
sys.modules["__main__"] = _main
del _script
_spec.loader.exec_module(_main)
"""
