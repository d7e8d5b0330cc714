"""Zygote (fork server) of the warm pool: pay for `import jax` once, fork a child per stage run.

Started by jaxjudge.isolation.pool through `sandbox.spawn()` as `python -I zygote.py SPOOL`, i.e.
already inside the slot's cgroup, rlimits, pool uid and bubblewrap (SPOOL is the slot's spool dir,
/job inside bwrap). It never creates a JAX backend: forking after backend initialisation hangs the
child at its first compile, so every request first checks that this process still has exactly one
thread and no backend, and exits (the pool respawns it) if not.

Protocol, JSON lines on stdin/stdout (stdout is reserved for it; stray prints go to stderr):
  <- {"hello": pid, "jax": version}
  -> {"op": "spare"}                   (after the previous run's leftovers are gone)
  <- {"forked": child_pid}            a spare child, forked ahead of the request: the pool moves
                                       it into a fresh per-run cgroup while nothing waits on it
  -> {"op": "run", "stage": "trace"|"execute", "job": "<subdir of SPOOL>", "env": {...},
      "cpu": seconds, "fsize": bytes, "bpf": "<hex seccomp filter>"|"-", "cache_dir": path|null}
                                       handed to the spare over its pipe: it starts at once
  <- {"error": ..., "not_run": true}   the spare died before it got the request (the zygote
                                       exits; the pool retries the run elsewhere)
  <- {"finished": exit_code}           when the child says its outputs are complete (it may say
                                       so early or never: the pool kills it either way)
  <- {"exit": wait_status, "cpu": s}   after the child is gone; then "spare" again
  -> {"op": "quit"} or EOF             the zygote exits (the spare sees EOF and exits)
A spare of the stage named by JAXJUDGE_ZYGOTE_SPARE_WARMUP first runs that stage's `warm_spare`
(trace: create the CPU backend, trace and export a built-in program), step by step, stopping as
soon as its request arrives. The child: waits for the request, sends stdout/stderr to
SPOOL/.io/<job>.out/.err, sets per-run rlimits and a fresh environment (XLA_FLAGS is read at
backend init, which happens in the child: the trusted zygote's spares never warm up),
installs the seccomp filter, chdirs to its job dir, runs the stage's `main()`, and `os._exit`s
(no teardown). Forking ahead takes the fork and the cgroup move (~15-20 ms: the kernel's
first cgroup migration waits for an RCU grace period) off each run's critical path.
Self-contained (stdlib + jax): the sandbox shows it the stages directory, not the grader package.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib.util
import json
import math
import os
import resource
import runpy
import select
import signal
import sys
import time
import traceback

PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG = 1
STAGES = ("trace", "execute")


# os._exit as it was before any submission ran: a stage's user code can rebind os._exit
# (to write its result file again once the real one is written), so the child never calls it.
_EXIT = os._exit

def _send(fd: int, obj: dict) -> None:
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def _install_seccomp(bpf_hex: str) -> None:
    class _Prog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    raw = bytes.fromhex(bpf_hex)
    buf = ctypes.create_string_buffer(raw, len(raw))
    prog = _Prog(len(raw) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) or libc.syscall(317, 1, 1, ctypes.byref(prog)):
        raise OSError(ctypes.get_errno(), "seccomp install failed")


def _contamination(xla_bridge) -> str:
    """Why forking now would be unsafe ('' when it is safe)."""
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        return f"zygote has {threads} threads"
    if getattr(xla_bridge, "_backends", None):
        return "zygote has initialised a JAX backend"
    return ""


def _warm_up() -> None:
    """Round-trip StableHLO through MLIR and find the PJRT plugins before the first fork.

    A child pays ~60 ms the first time it traces, lowers or parses (lazy rule registration,
    MLIR context and dialect loading); doing it here once makes that work part of the shared,
    copy-on-write heap. Each stage adds its own part (`warm_zygote`). None of it creates a JAX
    backend or a thread (checked before every fork by `_contamination`), and none of it touches
    user code or data."""
    from jax._src import xla_bridge
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    with mlir.make_ir_context():
        module = ir.Module.parse(
            "func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
            "  %0 = stablehlo.tanh %a : tensor<2xf32>\n"
            "  return %0 : tensor<2xf32>\n}\n"
        )
        module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    with contextlib.suppress(ImportError):
        from jaxlib.mlir.dialects import stablehlo  # noqa: F401  (stage B's interpreter)
    # The plugin scan (entry points, ~7 ms) registers factories and creates no backend; done
    # here, a child's backend start-up is only the client itself. Not when real plugins are
    # installed (e.g. jax[cuda]): loading one could start threads, so children keep doing it.
    register = getattr(xla_bridge, "_discover_and_register_pjrt_plugins", None)
    if callable(register) and importlib.util.find_spec("jax_plugins") is None:
        register()


_KEEP_FDS = 64  # directory descriptors open at once while removing a tree


def _remove_dir(path: str) -> None:
    """Remove a directory tree a child left, without recursion (shutil.rmtree recurses once per
    level and raises RecursionError past ~1,000: it would end the zygote) and by descriptor (a
    deep tree's paths are longer than PATH_MAX). Deeper than _KEEP_FDS, the subtree is moved up
    to the top directory and removed from there. Best effort: what cannot go is left."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        top = os.open(path, flags)
    except OSError:
        return
    stack = [(top, "")]  # (descriptor, its name in the directory below it on the stack)
    stuck: set[tuple[int, int]] = set()  # directories that would not go: never entered again
    moved = 0
    try:
        while stack:
            fd = stack[-1][0]
            entered = False
            try:
                with os.scandir(fd) as it:
                    names = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
            except OSError:
                names = []
            for name, is_dir in names:
                if not is_dir:
                    with contextlib.suppress(OSError):
                        os.unlink(name, dir_fd=fd)
                    continue
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    continue
                if (st.st_dev, st.st_ino) in stuck:
                    continue
                if len(stack) >= _KEEP_FDS:
                    moved += 1
                    with contextlib.suppress(OSError):
                        os.rename(name, f".deep-{moved}", src_dir_fd=fd, dst_dir_fd=top)
                        continue
                with contextlib.suppress(OSError):
                    os.chmod(name, 0o700, dir_fd=fd, follow_symlinks=False)
                try:
                    child = os.open(name, flags, dir_fd=fd)
                except OSError:
                    stuck.add((st.st_dev, st.st_ino))
                    continue
                stack.append((child, name))
                entered = True
                break
            if entered:
                continue
            done_fd, done_name = stack.pop()
            st = os.fstat(done_fd)
            os.close(done_fd)
            if stack:
                try:
                    os.rmdir(done_name, dir_fd=stack[-1][0])
                except OSError:
                    stuck.add((st.st_dev, st.st_ino))
    finally:
        for fd, _ in stack:
            with contextlib.suppress(OSError):
                os.close(fd)
    with contextlib.suppress(OSError):
        os.rmdir(path)


def _clean_dir(top: str, only_uid: int | None = None) -> None:
    """Empty `top` (or, with `only_uid`, remove the entries that uid owns there)."""
    with contextlib.suppress(OSError), os.scandir(top) as it:
        for entry in it:
            try:
                st = entry.stat(follow_symlinks=False)
                if only_uid is not None and st.st_uid != only_uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    _remove_dir(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                continue


def _clean_ipc() -> None:
    """Remove the SysV IPC objects our uid owns or created. Called between children, when every
    object of this uid in our IPC namespace is a child's: the namespace is the zygote's own
    (bubblewrap's, or the sandbox trampoline's) or the uid is the slot's, used by no one else.
    A shared memory segment or a queue would otherwise carry data to the next child."""
    libc = ctypes.CDLL(None, use_errno=True)
    uid = str(os.getuid())
    for kind, id_col in (("shm", "shmid"), ("sem", "semid"), ("msg", "msqid")):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        head = lines[0].split() if lines else []
        for line in lines[1:]:
            row = dict(zip(head, line.split(), strict=False))
            if uid not in (row.get("uid"), row.get("cuid")) or not row.get(id_col, "").isdigit():
                continue
            i = int(row[id_col])
            if kind == "shm":
                libc.shmctl(i, 0, None)  # IPC_RMID
            elif kind == "sem":
                libc.semctl(i, 0, 0)
            else:
                libc.msgctl(i, 0, None)


def _clean_after_child(private_tmp: bool, own_uid: bool) -> None:
    """Nothing a child left in shared places may reach the next child: with bubblewrap, the
    zygote's private /tmp and /dev (shm) are emptied; without it but with a uid of our own, the
    host's temporary directories lose what that uid created; and SysV IPC objects are removed."""
    if private_tmp:
        _clean_dir("/tmp")
        _clean_dir("/dev/shm")
    elif own_uid:
        for top in ("/tmp", "/var/tmp", "/dev/shm"):
            _clean_dir(top, os.getuid())
    if private_tmp or own_uid:
        _clean_ipc()


def _read_request(fd: int) -> dict | None:
    """The run request, one JSON line on the spare's pipe; None on EOF (the zygote quit)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 65536)
        if not chunk:
            return None
        data += chunk
        if len(data) > 1 << 20:
            return None
    req = json.loads(data)
    return req if isinstance(req, dict) else None


def _warm(warm, req_r: int) -> None:
    """The stage's own warm-up in a spare that is still waiting for its request (trusted code,
    no user data): each step first checks whether the request has arrived."""
    try:
        warm(lambda: bool(select.select([req_r], [], [], 0)[0]))
    except Exception:
        traceback.print_exc()  # only costs speed; the run itself starts as it would have


def _child(spool: str, mains: dict, req_r: int, done_w: int, closing: tuple[int, ...],
           zygote: int, warm) -> None:
    """Runs in the forked spare; never returns."""
    rc = 70
    ran = False
    try:
        for fd in closing:
            os.close(fd)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # never outlive the zygote
        if os.getppid() != zygote:  # it died before the death signal was armed
            os._exit(0)
        if warm is not None:
            _warm(warm, req_r)
        req = _read_request(req_r)
        if req is None:
            os._exit(0)
        os.close(req_r)
        ran = True
        job = os.path.join(spool, os.path.basename(req["job"]))
        io_base = os.path.join(spool, ".io", os.path.basename(req["job"]))
        for fd, suffix in ((1, ".out"), (2, ".err")):
            f = os.open(io_base + suffix, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
            os.dup2(f, fd)
            os.close(f)
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # our own /proc files, like a fresh process
        # What the warm-up used is not the run's: the limit counts from here.
        cpu = max(1, int(req["cpu"])) + math.ceil(time.process_time())
        resource.setrlimit(resource.RLIMIT_CPU, (cpu + 1, cpu + 2))
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(req["fsize"]), int(req["fsize"])))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in req["env"].items()})
        if req.get("cache_dir"):
            import jax

            jax.config.update("jax_compilation_cache_dir", req["cache_dir"])
            jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
            jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
            # Trusted-only results cache of stage B (see execute.py), beside the compile cache.
            # Files sit directly in the group-writable (setgid) dir: any trusted uid may share.
            os.environ["JAXJUDGE_RESULTS_CACHE"] = req["cache_dir"]
        if req.get("bpf", "-") != "-":
            _install_seccomp(req["bpf"])
        os.chdir(job)
        sys.argv = [req["stage"] + ".py", job]
        rc = int(mains[req["stage"]](job) or 0)
    except BaseException:
        traceback.print_exc()
        rc = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            if ran:  # outputs are complete: the pool need not wait for our teardown (~5-9 ms)
                os.write(done_w, bytes([rc & 0xFF]))
        finally:
            _EXIT(rc)  # the one captured at import: a submission may rebind os._exit


def _await_child(pid: int, done_r: int, finished) -> tuple[int, int, object] | None:
    """Wait until the child reports its outputs complete (one byte, its exit code: `finished`
    is called with it) or dies; wait4's answer if it was reaped meanwhile. A descendant that
    inherited the pipe cannot hold us up: the child's own death is checked as well."""
    while True:
        if select.select([done_r], [], [], 0.2)[0]:
            try:
                done = os.read(done_r, 1)
            except OSError:
                done = b""
            if done:
                finished(done[0])
            return None
        reaped = os.wait4(pid, os.WNOHANG)
        if reaped[0]:
            return reaped


def _fork_spare(spool: str, mains: dict, closing: tuple[int, ...],
                warm) -> tuple[int, int, int]:
    """Fork the next child; it waits for its request on a pipe and reports the end of its
    stage on another. (pid, request write end, done read end)"""
    sys.stdout.flush()
    sys.stderr.flush()
    req_r, req_w = os.pipe()
    done_r, done_w = os.pipe()
    zygote = os.getpid()
    pid = os.fork()
    if pid == 0:
        os.close(req_w)
        os.close(done_r)
        _child(spool, mains, req_r, done_w, closing, zygote, warm)
    os.close(req_r)
    os.close(done_w)
    return pid, req_w, done_r


def main(spool: str) -> int:
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # anything printed by imports goes to the log, never into the protocol
    os.close(devnull)

    import jax
    import numpy  # noqa: F401
    from jax import export  # noqa: F401
    from jax._src import xla_bridge
    from jax._src.interpreters import mlir  # noqa: F401
    from jax._src.lib.mlir import ir  # noqa: F401

    here = os.path.dirname(os.path.abspath(__file__))
    stages = {s: runpy.run_path(os.path.join(here, f"{s}.py"), run_name="jaxjudge_stage")
              for s in STAGES}
    mains = {s: g["main"] for s, g in stages.items()}
    # The stage whose spares warm up while they wait (the pool names it: the untrusted zygote's
    # trace stage; the trusted one's XLA flags only arrive with the request).
    spare_stage = os.environ.get("JAXJUDGE_ZYGOTE_SPARE_WARMUP", "")
    warm = stages[spare_stage].get("warm_spare") if spare_stage in stages else None
    if os.environ.get("JAXJUDGE_ZYGOTE_WARMUP", "1") != "0":
        try:
            _warm_up()
            for g in stages.values():
                if callable(g.get("warm_zygote")):
                    g["warm_zygote"]()
        except Exception:
            traceback.print_exc()  # only costs speed; the log shows why
    # A child (same uid) must not be able to read or write our memory through /proc.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    private_tmp = os.environ.get("JAXJUDGE_ZYGOTE_PRIVATE_TMP") == "1"
    own_uid = os.environ.get("JAXJUDGE_ZYGOTE_OWN_UID") == "1"
    gc.collect()
    gc.freeze()  # keep the imported heap's pages shared with the children (no refcount churn)
    _send(proto_out, {"hello": os.getpid(), "jax": jax.__version__})
    closing = (proto_in.fileno(), proto_out)
    spare: tuple[int, int, int] | None = None

    def next_spare() -> int:
        nonlocal spare
        why = _contamination(xla_bridge)
        if why:
            _send(proto_out, {"error": why})
            return 3
        spare = _fork_spare(spool, mains, closing, warm)
        _send(proto_out, {"forked": spare[0]})
        return 0

    def drop_spare() -> None:
        if spare is not None:
            os.close(spare[1])  # the spare reads EOF and exits
            os.close(spare[2])
            with contextlib.suppress(ChildProcessError):
                os.waitpid(spare[0], 0)

    while True:
        line = proto_in.readline()
        if not line:
            drop_spare()
            return 0
        req = json.loads(line)
        if req.get("op") == "quit":
            drop_spare()
            return 0
        if req.get("op") == "spare" and spare is None:
            # Asked for only once the pool has killed the last run's cgroup: nothing of an
            # earlier run is alive when the next child is forked.
            rc = next_spare()
            if rc:
                return rc
            continue
        if req.get("op") != "run" or req.get("stage") not in mains or spare is None:
            _send(proto_out, {"error": f"bad request {str(req)[:200]}"})
            drop_spare()
            return 2
        pid, req_w, done_r = spare
        spare = None
        dead, status, _ = os.wait4(pid, os.WNOHANG)
        if dead:  # it died warming up (e.g. a native abort): nothing of the run has started
            os.close(req_w)
            os.close(done_r)
            _send(proto_out, {"error": f"the spare died before its run (status {status})",
                              "not_run": True})
            return 3
        try:
            data = (json.dumps(req) + "\n").encode()
            while data:
                data = data[os.write(req_w, data):]
        except OSError:
            pass  # the spare is gone (killed by the pool): wait4 reports how
        os.close(req_w)
        reaped = _await_child(pid, done_r, lambda code: _send(proto_out, {"finished": code}))
        os.close(done_r)
        _, status, ru = reaped or os.wait4(pid, 0)
        _clean_after_child(private_tmp, own_uid)
        _send(proto_out, {"exit": status, "cpu": ru.ru_utime + ru.ru_stime})


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
