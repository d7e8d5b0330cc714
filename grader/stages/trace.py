"""Stage A (UNTRUSTED): load a submission, trace it for the requirement report, export it.

Runs inside the sandbox as `python -I trace.py JOB_DIR`, next to user code, so nothing it writes
is believed by the grader without checking: the jaxpr summary only feeds learner messages and the
exported programs are verified and executed by stage B. It must stay self-contained (stdlib,
numpy, jax only): the sandbox shows it this one file, not the grader package.

JOB_DIR/job.json:
  {"entry_point": "solve", "source": "submission.py",
   "signatures": [{"id": "s0", "args": [<pytree of {"shape": [..], "dtype": ".."}>, ...]}, ...],
   "symbolic": {"dims": ["B", "D", "H"], "args": [<same, dims named by strings>]}}  (optional)
Writes JOB_DIR/result.json and either JOB_DIR/poly.jaxexport (one shape-polymorphic program)
or one JOB_DIR/<id>.jaxexport per signature.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback

MAX_EQNS = 200_000
MAX_MESSAGE = 4000


def _write_result(job_dir: str, result: dict) -> None:
    tmp = os.path.join(job_dir, "result.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f)
    os.replace(tmp, os.path.join(job_dir, "result.json"))


def _short_traceback(exc: BaseException, filename: str) -> str:
    """The traceback frames that belong to the submission, plus the error line."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    lines = traceback.format_list(frames[-8:]) if frames else []
    lines += traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).strip()
    return text[-MAX_MESSAGE:]


def _to_spec_tree(node, jax, np, dims=None):
    """Spec JSON -> ShapeDtypeStructs; string dims name symbolic dimensions in `dims`."""
    if isinstance(node, dict) and set(node) == {"shape", "dtype"}:
        shape = tuple(dims[d] if isinstance(d, str) else int(d) for d in node["shape"])
        return jax.ShapeDtypeStruct(shape, np.dtype(node["dtype"]))
    if isinstance(node, dict):
        return {k: _to_spec_tree(v, jax, np, dims) for k, v in node.items()}
    if isinstance(node, list):
        return [_to_spec_tree(v, jax, np, dims) for v in node]
    raise ValueError(f"bad signature node {node!r}")


def _write_blob(job_dir: str, name: str, blob) -> None:
    with open(os.path.join(job_dir, name), "wb") as f:
        f.write(bytes(blob))


def _policy_names(jax) -> list[tuple[str, object]]:
    """(name, policy) for every policy jax ships, canonical names before their aliases."""
    cp = jax.checkpoint_policies
    preferred = [
        "dots_saveable",
        "dots_with_no_batch_dims_saveable",
        "nothing_saveable",
        "everything_saveable",
    ]
    names = preferred + sorted(n for n in dir(cp) if not n.startswith("_") and n not in preferred)
    out = []
    for n in names:
        obj = getattr(cp, n, None)
        if obj is not None and callable(obj):
            out.append((n, obj))
    return out


def _name_policy(policy, policies) -> str:
    if policy is None:
        return "none"
    for name, obj in policies:
        if policy is obj:
            return name
    for name, obj in policies:
        try:
            same_kind = type(policy) is type(obj)
            if same_kind and not hasattr(obj, "__code__") and policy == obj:
                return name
        except Exception:
            continue
    return "custom"


def _sub_jaxprs(value):
    """Nested jaxprs held by one eqn param (Jaxpr, ClosedJaxpr, or sequences of them)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if hasattr(v, "eqns") and hasattr(v, "invars"):
            yield v
        elif hasattr(v, "jaxpr") and hasattr(v.jaxpr, "eqns"):
            yield v.jaxpr
        elif isinstance(v, (list, tuple)):
            stack.extend(reversed(v))


def summarize_jaxpr(jaxpr, checkpoint_prim, policies) -> dict:
    """Plain-JSON summary of every eqn, recursing into nested jaxprs with an explicit stack."""
    root: dict = {"eqns": []}
    stack = [(jaxpr, root)]
    count = 0
    while stack:
        jp, out = stack.pop()
        for eqn in jp.eqns:
            count += 1
            if count > MAX_EQNS:
                raise RuntimeError("the traced program is too large to summarize")
            is_cp = eqn.primitive is checkpoint_prim
            entry: dict = {
                "primitive": str(eqn.primitive.name),
                "checkpoint": is_cp,
                "policy": None,
                "differentiated": None,
                "prevent_cse": None,
                "jaxprs": [],
            }
            if is_cp:
                entry["policy"] = _name_policy(eqn.params.get("policy"), policies)
                entry["differentiated"] = bool(eqn.params.get("differentiated", False))
                entry["prevent_cse"] = bool(eqn.params.get("prevent_cse", True))
            for value in eqn.params.values():
                for sub in _sub_jaxprs(value):
                    child: dict = {"eqns": []}
                    entry["jaxprs"].append(child)
                    stack.append((sub, child))
            out["eqns"].append(entry)
    return root


_PREPARED: tuple | None = None


def prepare() -> tuple:
    """(checkpoint primitive, named policies), found by identity before any user code runs.
    The warm pool's zygote calls this before forking, so children inherit the answer."""
    global _PREPARED
    if _PREPARED is None:
        import jax
        import numpy as np

        closed = jax.make_jaxpr(jax.checkpoint(lambda v: v))(np.float32(1))
        _PREPARED = (closed.eqns[0].primitive, _policy_names(jax))
    return _PREPARED


def _remat_mlp():
    """A value_and_grad'ed residual tanh MLP under checkpoint(dots_saveable), jitted, with
    symbolic shapes: the paths a typical submission takes. Warm-up only, never graded."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import export

    def block(p, x):
        return x + jnp.tanh(x @ p["w"] + p["b"]) @ p["w"].T

    def loss(p, x, y):
        out = jax.checkpoint(block, policy=jax.checkpoint_policies.dots_saveable)(p, x)
        return jnp.mean((out - y) ** 2)

    b, d, h = export.symbolic_shape("b, d, h")
    params = {"w": jax.ShapeDtypeStruct((d, h), np.float32),
              "b": jax.ShapeDtypeStruct((h,), np.float32)}
    xs = jax.ShapeDtypeStruct((b, d), np.float32)
    return jax.jit(jax.value_and_grad(loss)), (params, xs, xs)


def warm_zygote() -> None:
    """What the pool's zygote does once before forking: `prepare()` and a trace of `_remat_mlp`
    (tracing creates no backend and no thread, so the zygote stays fork-safe)."""
    prepare()
    fn, args = _remat_mlp()
    fn.trace(*args)


def warm_spare(stop) -> list[str]:
    """Pre-pay, in a forked spare child before its request arrives, what a child otherwise pays
    on its first trace and export (~30 ms): the CPU backend (lowering asks for a default
    device, so it cannot be made in the fork-safe zygote), then a trace and an export of
    `_remat_mlp`. No user code or data is involved. `stop()` is asked before each step, so a
    waiting run waits for one step at most. Returns the steps done (for tests and logs)."""
    import jax
    from jax import export

    fn, args = _remat_mlp()  # builds functions and specs only: nothing traced yet
    steps = (
        ("backend", jax.devices),
        ("trace", lambda: fn.trace(*args)),
        ("export", lambda: export.export(fn)(*args).serialize()),
    )
    done: list[str] = []
    for name, step in steps:
        if stop():
            break
        step()
        done.append(name)
    return done


def main(job_dir: str) -> int:
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    with open(os.path.join(job_dir, "job.json"), encoding="utf-8") as f:
        job = json.load(f)
    source_path = os.path.join(job_dir, os.path.basename(job.get("source", "submission.py")))
    # The name the learner knows the file by, for tracebacks (sanitized by the grader).
    source_name = str(job.get("display_name") or "submission.py")
    result: dict = {"status": "internal", "message": "", "timings": timings}

    # Import everything we rely on BEFORE user code can patch it.
    import jax
    import numpy as np
    from jax import export as jax_export

    # No source locations in the exported program: they differ between sources of one program
    # and would defeat the grader's cache of stage B results (and they reach no learner).
    with contextlib.suppress(Exception):
        jax.config.update("jax_traceback_in_locations_limit", 0)
    make_jaxpr = jax.make_jaxpr
    jit = jax.jit
    export_fn = jax_export.export
    checkpoint_prim, policies = prepare()
    result["jax_version"] = jax.__version__
    timings["import_jax"] = time.perf_counter() - t0

    # 1. Load the submission.
    with open(source_path, "rb") as f:
        raw = f.read()
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        result.update(status="compile_error", message=f"the file is not valid UTF-8 ({exc})")
        _write_result(job_dir, result)
        return 0
    if not source.strip():
        result.update(status="compile_error", message="the file is empty: define solve(...)")
        _write_result(job_dir, result)
        return 0
    try:
        code = compile(source, source_name, "exec")
    except (SyntaxError, ValueError) as exc:
        result.update(status="compile_error", message=_short_traceback(exc, source_name))
        _write_result(job_dir, result)
        return 0
    module_globals: dict = {"__name__": "submission", "__file__": source_name}
    t1 = time.perf_counter()
    try:
        exec(code, module_globals)
    except BaseException as exc:  # SystemExit included: the submission ended its own import
        result.update(
            status="runtime_error",
            message="importing your file failed:\n" + _short_traceback(exc, source_name),
        )
        _write_result(job_dir, result)
        return 0
    timings["load"] = time.perf_counter() - t1
    entry = job.get("entry_point", "solve")
    fn = module_globals.get(entry)
    if not callable(fn):
        result.update(
            status="compile_error",
            message=f"no function named {entry!r} is defined at the top level of your file",
        )
        _write_result(job_dir, result)
        return 0

    signatures = job["signatures"]
    symbolic = job.get("symbolic")
    jitted = jit(fn)
    # 2+3 fast path: one shape-polymorphic trace feeds both the requirement report and the
    #    export (jax caches the trace, so exporting the same jitted function does not trace
    #    again): one trace, one program, one verification; stage B still specialises per shape.
    if symbolic:
        t2 = time.perf_counter()
        try:
            names = list(symbolic["dims"])
            dims = dict(zip(names, jax_export.symbolic_shape(", ".join(names)), strict=True))
            args = _to_spec_tree(symbolic["args"], jax, np, dims)
            closed = jitted.trace(*args).jaxpr  # jax >= 0.4.38 (pyproject's floor)
            summary = summarize_jaxpr(closed.jaxpr, checkpoint_prim, policies)
            timings["trace"] = time.perf_counter() - t2
            t3 = time.perf_counter()
            blob = export_fn(jitted)(*args).serialize()
            _write_blob(job_dir, "poly.jaxexport", blob)
            timings["export"] = time.perf_counter() - t3
            result.update(status="ok", jaxpr=summary, exports={"poly": "poly.jaxexport"})
            _write_result(job_dir, result)
            return 0
        except BaseException:  # SystemExit too: the per-signature path below reports it
            pass  # needs concrete shapes (or fails): the per-signature path reports errors

    # 2. Trace for the requirement report (first signature is enough: structure only).
    t2 = time.perf_counter()
    try:
        args = _to_spec_tree(signatures[0]["args"], jax, np)
        closed = make_jaxpr(fn)(*args)
        result["jaxpr"] = summarize_jaxpr(closed.jaxpr, checkpoint_prim, policies)
    except BaseException as exc:
        result.update(status="trace_error", message=_short_traceback(exc, source_name),
                      error_type=type(exc).__name__)
        _write_result(job_dir, result)
        return 0
    timings["trace"] = time.perf_counter() - t2

    # 3. Export one program per input signature.
    t3 = time.perf_counter()
    exports = {}
    for sig in signatures:
        try:
            args = _to_spec_tree(sig["args"], jax, np)
            exported = export_fn(jit(fn))(*args)
            blob = exported.serialize()
        except BaseException as exc:
            result.update(status="export_error", message=_short_traceback(exc, source_name),
                          error_type=type(exc).__name__, signature=sig["id"])
            _write_result(job_dir, result)
            return 0
        name = f"{sig['id']}.jaxexport"
        _write_blob(job_dir, name, blob)
        exports[sig["id"]] = name
    timings["export"] = time.perf_counter() - t3
    result.update(status="ok", exports=exports)
    _write_result(job_dir, result)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown (jax's atexit work): the result is already on disk.
    os._exit(code)
