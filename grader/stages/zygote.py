"""Zygote (fork server) of the warm pool: pay for `import jax` once, fork a child per stage run.

Started by grader.pool through `sandbox.spawn()` as `python -I zygote.py SPOOL`, i.e. already
inside the slot's cgroup, rlimits, pool uid and bubblewrap (SPOOL is the slot's spool dir, /job
inside bwrap). It never creates a JAX backend: forking after backend initialisation hangs the child
at its first compile, so every request first checks that this process still has exactly one
thread and no backend, and exits (the pool respawns it) if not.

Protocol, JSON lines on stdin/stdout (stdout is reserved for it; stray prints go to stderr):
  <- {"hello": pid, "jax": version}
  -> {"op": "run", "stage": "trace"|"execute", "job": "<subdir of SPOOL>", "env": {...},
      "cpu": seconds, "fsize": bytes, "bpf": "<hex seccomp filter>"|"-", "cache_dir": path|null}
  <- {"forked": child_pid}            the parent now moves the child into its per-run cgroup
  -> {"op": "go"}                      (anything else: the child exits without running)
  <- {"exit": wait_status, "cpu": s}   after the child is gone
  -> {"op": "quit"} or EOF             the zygote exits
The child: stdout/stderr to SPOOL/.io/<job>.out/.err, waits for "go", sets per-run rlimits and a
fresh environment (XLA_FLAGS is read at backend init, which happens in the child), installs the
seccomp filter, chdirs to its job dir, runs the stage's `main()`, and `os._exit`s (no teardown).
Self-contained (stdlib + jax): the sandbox shows it the stages directory, not the grader package.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import os
import resource
import runpy
import shutil
import sys
import traceback

PR_SET_DUMPABLE = 4
STAGES = ("trace", "execute")


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
    """Trace a small remat MLP and round-trip StableHLO through MLIR before the first fork.

    A child pays ~60 ms the first time it traces, lowers or parses (lazy rule registration,
    MLIR context and dialect loading); doing it here once makes that work part of the shared,
    copy-on-write heap. None of it creates a JAX backend or a thread (checked before every fork
    by `_contamination`), and none of it touches user code or data."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import export
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    def block(p, x):
        return x + jnp.tanh(x @ p["w"] + p["b"]) @ p["w"].T

    def loss(p, x, y):
        out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(p, x)
        return jnp.mean((out - y) ** 2)

    b, d, h = export.symbolic_shape("b, d, h")
    f32 = np.float32
    params = {"w": jax.ShapeDtypeStruct((d, h), f32), "b": jax.ShapeDtypeStruct((h,), f32)}
    xs = jax.ShapeDtypeStruct((b, d), f32)
    jax.make_jaxpr(jax.value_and_grad(loss))(params, xs, xs)
    with mlir.make_ir_context():
        module = ir.Module.parse(
            "func.func public @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
            "  %0 = stablehlo.tanh %a : tensor<2xf32>\n"
            "  return %0 : tensor<2xf32>\n}\n"
        )
        module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    with contextlib.suppress(ImportError):
        from jaxlib.mlir.dialects import stablehlo  # noqa: F401  (stage B's interpreter)


def _clean_tmp() -> None:
    """Empty the private /tmp (bwrap tmpfs) so no child sees what an earlier one left."""
    for name in os.listdir("/tmp"):
        path = os.path.join("/tmp", name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _child(req: dict, spool: str, mains: dict, go_r: int, closing: tuple[int, ...]) -> None:
    """Runs in the forked child; never returns."""
    rc = 70
    try:
        for fd in closing:
            os.close(fd)
        job = os.path.join(spool, os.path.basename(req["job"]))
        io_base = os.path.join(spool, ".io", os.path.basename(req["job"]))
        for fd, suffix in ((1, ".out"), (2, ".err")):
            f = os.open(io_base + suffix, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
            os.dup2(f, fd)
            os.close(f)
        if os.read(go_r, 1) != b"g":
            os._exit(0)
        os.close(go_r)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # our own /proc files, like a fresh process
        cpu = max(1, int(req["cpu"]))
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
        finally:
            os._exit(rc)


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
    mains = {s: runpy.run_path(os.path.join(here, f"{s}.py"), run_name="jaxjudge_stage")["main"]
             for s in STAGES}
    if os.environ.get("JAXJUDGE_ZYGOTE_WARMUP", "1") != "0":
        try:
            _warm_up()
        except Exception:
            traceback.print_exc()  # only costs speed; the log shows why
    # A child (same uid) must not be able to read or write our memory through /proc.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    private_tmp = os.environ.get("JAXJUDGE_ZYGOTE_PRIVATE_TMP") == "1"
    gc.collect()
    gc.freeze()  # keep the imported heap's pages shared with the children (no refcount churn)
    _send(proto_out, {"hello": os.getpid(), "jax": jax.__version__})
    while True:
        line = proto_in.readline()
        if not line:
            return 0
        req = json.loads(line)
        if req.get("op") == "quit":
            return 0
        if req.get("op") != "run" or req.get("stage") not in mains:
            _send(proto_out, {"error": f"bad request {str(req)[:200]}"})
            return 2
        why = _contamination(xla_bridge)
        if why:
            _send(proto_out, {"error": why})
            return 3
        sys.stdout.flush()
        sys.stderr.flush()
        go_r, go_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(go_w)
            _child(req, spool, mains, go_r, (proto_in.fileno(), proto_out))
        os.close(go_r)
        _send(proto_out, {"forked": pid})
        line = proto_in.readline()
        try:
            go = bool(line) and json.loads(line).get("op") == "go"
        except ValueError:
            go = False
        if go:
            os.write(go_w, b"g")
        os.close(go_w)
        _, status, ru = os.wait4(pid, 0)
        if private_tmp:
            _clean_tmp()
        _send(proto_out, {"exit": status, "cpu": ru.ru_utime + ru.ru_stime})
        if not line:
            return 0


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
