"""Stage B (TRUSTED code, untrusted data): verify and run the programs stage A exported.

No user Python runs here: the exported StableHLO is deserialized, checked (platform, effects,
custom calls, input signature) and executed on every test's inputs. So the numbers the grader
compares come from the very program whose structure it checks. The input files still came from
an untrusted process, hence the sandbox. Self-contained (stdlib, numpy, jax) like stage A.

JOB_DIR/job.json:
  {"arg_names": ["params", "x", "y"],
   "signatures": [{"id": "s0", "args": [<concrete spec tree>, ...]}, ...],
   "programs": [{"id": "poly", "export": "poly.jaxexport", "args": [<spec tree; str dims are
                 symbolic>], "signatures": ["s0", ...], "allowed_custom_calls": [...]}],
   "tests": [{"name": "example-1", "signature": "s0", "inputs": [<value tree>, ...]}],
   "allowed_custom_calls": [], "max_program_bytes": 8000000}
Writes JOB_DIR/result.json and JOB_DIR/<program id>.mlir (generic op form) per program.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import sys
import time
import traceback

FORBIDDEN_OPS = (
    "stablehlo.infeed",
    "stablehlo.outfeed",
    "stablehlo.send",
    "stablehlo.recv",
    "mhlo.infeed",
    "mhlo.outfeed",
    "mhlo.send",
    "mhlo.recv",
)
_CUSTOM_CALL_RE = re.compile(
    r'"(?:stablehlo|mhlo)\.custom_call"\([^)]*\)\s*<\{[^}]*?call_target_name\s*=\s*"([^"]*)"'
)


RESULTS_CACHE_MAX_FILES = 5000


def _results_key(job: dict, texts: list[str], jax_version: str) -> str:
    """Same verified programs (debug info stripped) + same test inputs -> same outputs.

    Identical programs are common among correct submissions even when their sources differ
    (names, comments, layout), so they are executed once."""
    h = hashlib.sha256()
    for part in (jax_version, os.environ.get("XLA_FLAGS", ""), *texts):
        h.update(part.encode() + b"\0")
    h.update(json.dumps([job["programs"], job["signatures"], job["tests"]],
                        sort_keys=True).encode())
    return h.hexdigest()


def _cache_read(cache_dir: str, key: str) -> dict | None:
    try:
        with open(os.path.join(cache_dir, f"results-{key}.json"), encoding="utf-8") as f:
            outputs = json.load(f)
    except (OSError, ValueError):
        return None
    return outputs if isinstance(outputs, dict) else None


def _cache_write(cache_dir: str, key: str, outputs: dict) -> None:
    """Best effort: a full or unwritable cache only costs speed."""
    try:
        tmp = os.path.join(cache_dir, f".results-{key}.{os.getpid()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(outputs, f)
        os.replace(tmp, os.path.join(cache_dir, f"results-{key}.json"))
        if random.random() < 1 / 64:  # bounded: drop the oldest entries now and then
            entries = [e for e in os.scandir(cache_dir) if e.name.startswith("results-")]
            if len(entries) > RESULTS_CACHE_MAX_FILES:
                entries.sort(key=lambda e: e.stat().st_mtime)
                for e in entries[: len(entries) - RESULTS_CACHE_MAX_FILES]:
                    os.unlink(e.path)
    except OSError:
        pass


class Rejected(Exception):
    """The exported program is not one the grader will run; the message says why."""


def _write_result(job_dir: str, result: dict) -> None:
    tmp = os.path.join(job_dir, "result.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(result, f, allow_nan=True)
    os.replace(tmp, os.path.join(job_dir, "result.json"))


def _is_spec(node) -> bool:
    return isinstance(node, dict) and set(node) == {"shape", "dtype"}


def _value_tree(value, spec, np):
    """Build numpy inputs shaped and typed exactly as the signature says."""
    if isinstance(spec, dict) and set(spec) == {"shape", "dtype"}:
        arr = np.asarray(value, dtype=np.dtype(spec["dtype"]))
        if list(arr.shape) != [int(d) for d in spec["shape"]]:
            raise ValueError(f"input shape {arr.shape} does not match {spec['shape']}")
        return arr
    if isinstance(spec, dict):
        return {k: _value_tree(value[k], s, np) for k, s in spec.items()}
    return [_value_tree(v, s, np) for v, s in zip(value, spec, strict=True)]


def _encode(value, np, jax):
    """Outputs as plain JSON: containers tagged, arrays as dtype + shape + flat data."""
    if isinstance(value, dict):
        return {"t": "dict", "v": {str(k): _encode(v, np, jax) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return {"t": "list", "v": [_encode(v, np, jax) for v in value]}
    if value is None:
        return {"t": "none"}
    arr = np.asarray(value)
    data = arr.reshape(-1).tolist()
    if arr.dtype.kind == "f":
        data = [x if math.isfinite(x) else repr(x) for x in data]
    elif arr.dtype.kind not in "biu":
        data = [float(np.real(x)) for x in arr.reshape(-1)]
    return {"t": "array", "dtype": str(arr.dtype), "shape": list(arr.shape), "data": data}


def _path_name(path, arg_names: list[str]) -> str:
    """((params, x, y), {}) flatten path -> "params.w1" / "x"."""
    parts: list[str] = []
    for k in path:
        key = getattr(k, "key", getattr(k, "idx", getattr(k, "name", None)))
        parts.append(str(key))
    # parts[0] is 0 (positional args tuple), parts[1] is the argument index.
    if len(parts) >= 2 and parts[0] == "0":
        idx = int(parts[1])
        head = arg_names[idx] if idx < len(arg_names) else f"arg{idx}"
        return ".".join([head, *parts[2:]])
    return ".".join(parts)


def _check_program(exp, spec_args, arg_names, allowed, max_bytes, jax, ir, mlir) -> dict:
    """Refuse anything but a pure, single-device CPU program with exactly the test's inputs.

    `spec_args` is the JSON spec tree; a dimension is an int, or a string naming a symbolic
    dimension of a shape-polymorphic export."""
    if "cpu" not in tuple(exp.platforms):
        raise Rejected(f"the program was exported for {list(exp.platforms)}, not for cpu")
    if tuple(exp.ordered_effects) or tuple(exp.unordered_effects):
        raise Rejected("the program has side effects (host callbacks, debug prints or I/O); "
                       "solve must be a pure JAX function")
    if int(getattr(exp, "nr_devices", 1)) != 1:
        raise Rejected("the program must run on a single device")
    tree = (tuple(spec_args), {})
    leaves, expected_tree = jax.tree_util.tree_flatten(tree, is_leaf=_is_spec)
    if exp.in_tree != expected_tree:
        raise Rejected(f"the program's inputs {exp.in_tree} are not (params, x, y)")
    want = [(tuple(str(d) for d in s["shape"]), str(s["dtype"])) for s in leaves]
    got = [(tuple(str(d) for d in a.shape), str(a.dtype)) for a in exp.in_avals]
    if want != got:
        raise Rejected(f"the program's input shapes/dtypes {got} differ from the test's {want}")
    with mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=False)
    if len(text) > max_bytes:
        raise Rejected(f"the program is too large ({len(text)} bytes of StableHLO)")
    for op in FORBIDDEN_OPS:
        if f'"{op}"' in text:
            raise Rejected(f"the program uses {op}, which the grader does not run")
    targets = set(_CUSTOM_CALL_RE.findall(text))
    if text.count("custom_call\"") != len(_CUSTOM_CALL_RE.findall(text)):
        raise Rejected("the program has a custom_call the grader cannot identify")
    bad = sorted(t for t in targets if t not in allowed)
    if bad:
        raise Rejected(f"the program calls out to {bad} (host callbacks or custom kernels are "
                       "not allowed; use only jax.numpy / jax.lax operations)")
    paths = jax.tree_util.tree_flatten_with_path(tree, is_leaf=_is_spec)[0]
    names = [_path_name(p, arg_names) for p, _ in paths]
    kept = sorted(int(i) for i in exp.module_kept_var_idx)
    return {"text": text, "args": [names[i] for i in kept]}


def main(job_dir: str) -> int:
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    result: dict = {"status": "internal", "message": "", "timings": timings}
    with open(os.path.join(job_dir, "job.json"), encoding="utf-8") as f:
        job = json.load(f)

    import jax
    import numpy as np
    from jax import export as jax_export
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    result["jax_version"] = jax.__version__
    timings["import_jax"] = time.perf_counter() - t0
    arg_names = list(job.get("arg_names", []))
    allowed = set(job.get("allowed_custom_calls", []))
    max_bytes = int(job.get("max_program_bytes", 8_000_000))

    programs: dict[str, dict] = {}
    callables = {}
    specs = {sig["id"]: sig["args"] for sig in job["signatures"]}
    program_of: dict[str, str] = {}
    texts: dict[str, str] = {}
    t1 = time.perf_counter()
    for prog in job["programs"]:
        pid = prog["id"]
        path = os.path.join(job_dir, os.path.basename(prog["export"]))
        try:
            with open(path, "rb") as f:
                blob = f.read(64 * 1024 * 1024 + 1)
            if len(blob) > 64 * 1024 * 1024:
                raise Rejected("the exported program is larger than 64 MiB")
            try:
                exp = jax_export.deserialize(bytearray(blob))
            except Exception as exc:
                raise Rejected(
                    f"the exported program could not be loaded ({type(exc).__name__})"
                ) from None
            ok_calls = allowed | set(prog.get("allowed_custom_calls", []))
            info = _check_program(exp, prog["args"], arg_names, ok_calls, max_bytes, jax, ir, mlir)
        except Rejected as exc:
            result.update(status="rejected", message=str(exc), program=pid)
            _write_result(job_dir, result)
            return 0
        text_name = f"{pid}.mlir"
        with open(os.path.join(job_dir, text_name), "w", encoding="utf-8") as f:
            f.write(info["text"])
        programs[pid] = {"text_file": text_name, "args": info["args"]}
        texts[pid] = info["text"]
        callables[pid] = jax.jit(exp.call)
        for sid in prog["signatures"]:
            program_of[sid] = pid
    timings["verify"] = time.perf_counter() - t1
    result["programs"] = programs

    cache_dir = os.environ.get("JAXJUDGE_RESULTS_CACHE")
    key = ""
    if cache_dir:
        key = _results_key(job, [texts[p] for p in sorted(texts)], jax.__version__)
        cached = _cache_read(cache_dir, key)
        if cached is not None and set(cached) == {t["name"] for t in job["tests"]}:
            result.update(status="ok", outputs=cached, cached=True)
            _write_result(job_dir, result)
            return 0

    t2 = time.perf_counter()
    outputs: dict[str, dict] = {}
    for test in job["tests"]:
        sid = test["signature"]
        try:
            args = _value_tree(test["inputs"], specs[sid], np)
            out = callables[program_of[sid]](*args)
            out = jax.block_until_ready(out)
            outputs[test["name"]] = {"ok": True, "value": _encode(out, np, jax)}
        except Exception as exc:
            msg = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            outputs[test["name"]] = {"ok": False, "error": msg[-2000:]}
    timings["execute"] = time.perf_counter() - t2
    if key and all(o.get("ok") for o in outputs.values()):
        _cache_write(cache_dir, key, outputs)
    result.update(status="ok", outputs=outputs)
    _write_result(job_dir, result)
    return 0


if __name__ == "__main__":
    rc = main(sys.argv[1])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(rc)
