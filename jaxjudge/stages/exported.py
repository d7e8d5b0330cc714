"""Stage B's reader of a `jax.export` artifact, and its MLIR context, without `import jax`.

Stage B (execute.py) verifies and runs the program stage A exported. What it needs from the
artifact is small: the input and output trees, the input shapes and dtypes, the inputs the
module keeps, platforms, effects, device count and the module. `jax.export.deserialize` reads
all that, but `import jax` costs ~0.35 s of CPU in every one-off grade, against ~0.1 s for the
parts of jaxlib the reader and the interpreter use. So this module reads the flatbuffer itself,
through the accessor classes jax generates from its schema (`serialization_generated.py`,
loaded by path so that the `jax` package is not imported: the installed jax's own schema, so
every serialization version that jax reads, this reads), and builds an MLIR context with the
dialects jax's would have. Only a program the interpreter cannot run imports jax (execute.py).

Self-contained (stdlib, numpy, flatbuffers, jaxlib): it runs inside stage B's sandbox. The
artifact is attacker-shaped: anything odd raises `ValueError`, which stage B reports as a
program it cannot load.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

_SCHEMA: Any = None
_DTYPE_NAMES = {"bool": "bool", "bf16": "bfloat16", "f0": "float0"}
_KIND_NAMES = {0: "leaf", 1: "none", 2: "tuple", 3: "list", 4: "dict", 5: "custom"}
MAX_TREE_NODES = 100_000
MAX_TREE_DEPTH = 200
MAX_RANK = 64
MAX_LISTED = 16  # platforms, effects, disabled checks


class Tree:
    """A pytree structure of leaves, None, tuples, lists and dicts (sorted keys), as jax
    flattens them: what the artifact's trees may hold (a custom node needs its Python class
    registered, which stage B never has)."""

    __slots__ = ("children", "keys", "kind", "n_leaves")

    def __init__(self, kind: str, children: tuple[Tree, ...] = (),
                 keys: tuple[str, ...] = ()) -> None:
        self.kind, self.children, self.keys = kind, children, keys
        self.n_leaves = 1 if kind == "leaf" else sum(c.n_leaves for c in children)

    @classmethod
    def of(cls, value, is_leaf=None) -> Tree:
        """The structure of `value` (a leaf: anything but None, tuple, list, dict, or what
        `is_leaf` says is one)."""
        if is_leaf is not None and is_leaf(value):
            return cls("leaf")
        if value is None:
            return cls("none")
        if isinstance(value, dict):
            keys = tuple(sorted(value))
            return cls("dict", tuple(cls.of(value[k], is_leaf) for k in keys), keys)
        if type(value) in (tuple, list):  # a subclass (a namedtuple) is jax's custom node
            return cls(type(value).__name__, tuple(cls.of(v, is_leaf) for v in value))
        return cls("leaf")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Tree) and self.kind == other.kind
                and self.keys == other.keys and self.children == other.children)

    def __hash__(self) -> int:
        return hash((self.kind, self.keys, self.children))

    def __repr__(self) -> str:
        return f"PyTreeDef({self._show()})"

    def _show(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = [c._show() for c in self.children]
        if self.kind == "dict":
            pairs = zip(self.keys, inner, strict=True)
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in pairs) + "}"
        if self.kind == "list":
            return "[" + ", ".join(inner) + "]"
        return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"

    def leaves(self, value) -> list:
        """`value`'s leaves in flattening order; `value` must have this structure."""
        out: list = []
        self._leaves(value, out)
        return out

    def _leaves(self, value, out: list) -> None:
        if self.kind == "leaf":
            out.append(value)
        elif self.kind == "dict":
            if not isinstance(value, dict) or tuple(sorted(value)) != self.keys:
                raise ValueError("the value does not have the program's structure")
            for k, c in zip(self.keys, self.children, strict=True):
                c._leaves(value[k], out)
        elif self.kind in ("tuple", "list"):
            if not isinstance(value, (tuple, list)) or len(value) != len(self.children):
                raise ValueError("the value does not have the program's structure")
            for v, c in zip(value, self.children, strict=True):
                c._leaves(v, out)

    def unflatten(self, leaves: list):
        """The tree of this structure around `leaves` (tuples as tuples, like jax)."""
        if len(leaves) != self.n_leaves:
            raise ValueError(f"{len(leaves)} values for a structure of {self.n_leaves}")
        return self._build(iter(leaves))

    def _build(self, it):
        if self.kind == "leaf":
            return next(it)
        if self.kind == "none":
            return None
        built = [c._build(it) for c in self.children]
        if self.kind == "dict":
            return dict(zip(self.keys, built, strict=True))
        return tuple(built) if self.kind == "tuple" else built

    def paths(self) -> list[tuple]:
        """Each leaf's path of keys (dict keys, sequence indices), as jax's
        `tree_flatten_with_path` names them."""
        out: list[tuple] = []
        self._paths((), out)
        return out

    def _paths(self, prefix: tuple, out: list) -> None:
        if self.kind == "leaf":
            out.append(prefix)
        for i, c in enumerate(self.children):
            c._paths((*prefix, self.keys[i] if self.kind == "dict" else i), out)


def leaves(value) -> list:
    """`value`'s leaves in the order jax flattens it (dict keys sorted; None has none)."""
    return Tree.of(value).leaves(value)


class Exported:
    """What stage B reads of one serialized `jax.export.Exported`."""

    def __init__(self, fields: dict[str, Any]) -> None:
        self.platforms: tuple[str, ...] = fields["platforms"]
        self.ordered_effects: tuple[str, ...] = fields["ordered_effects"]
        self.unordered_effects: tuple[str, ...] = fields["unordered_effects"]
        self.nr_devices: int = fields["nr_devices"]
        self.in_tree: Tree = fields["in_tree"]
        self.out_tree: Tree = fields["out_tree"]
        self.in_avals: tuple[tuple[tuple[str, ...], str], ...] = fields["in_avals"]
        self.out_avals: tuple[tuple[tuple[str, ...], str], ...] = fields["out_avals"]
        self.module_kept_var_idx: tuple[int, ...] = fields["module_kept_var_idx"]
        self.mlir_module_serialized: bytes = fields["module"]
        # Every field but the module, for the results cache's key (execute._results_key).
        self.meta = "\n".join(f"{k}={v!r}" for k, v in sorted(fields.items()) if k != "module")

    def module(self, context):
        """The module, parsed into `context` (the serialized form is a StableHLO portable
        artifact: newer jaxlibs read it into a module, older ones into text). Read back from
        its text either way, as `Exported.mlir_module()` gives it: the text drops what reading
        the artifact adds (empty argument attributes), so every jaxlib prints one program the
        same way."""
        from jaxlib.mlir import ir

        read_artifact = native().mlir.deserialize_portable_artifact
        with context:
            try:
                out = read_artifact(self.mlir_module_serialized, context)
            except TypeError:  # jaxlib < 0.5: text, and no context argument
                out = read_artifact(self.mlir_module_serialized)
            if not isinstance(out, (str, bytes)):
                out = out.operation.get_asm(enable_debug_info=True)
            return ir.Module.parse(out)


def schema():
    """jax's generated accessors (`jax/_src/export/serialization_generated.py`), loaded on
    their own: finding the `jax` package's directory does not import it."""
    global _SCHEMA
    if _SCHEMA is None:
        spec = importlib.util.find_spec("jax")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("jax is not installed")
        path = os.path.join(next(iter(spec.submodule_search_locations)), "_src", "export",
                            "serialization_generated.py")
        loaded = importlib.util.spec_from_file_location("jaxjudge_export_schema", path)
        if loaded is None or loaded.loader is None:
            raise ImportError(f"cannot load {path}")
        module = importlib.util.module_from_spec(loaded)
        loaded.loader.exec_module(module)
        _SCHEMA = module
    return _SCHEMA


def _dtype_name(kind: int, names: dict[int, str]) -> str:
    """The numpy name of a serialized dtype ("f32" -> "float32"); an unknown one keeps the
    schema's name, which no problem declares."""
    raw = names.get(kind, f"dtype#{kind}")
    if raw in _DTYPE_NAMES:
        return _DTYPE_NAMES[raw]
    for prefix, word in (("ui", "uint"), ("i", "int"), ("c", "complex"), ("f", "float")):
        if raw.startswith(prefix) and raw[len(prefix):].isdigit():
            return f"{word}{raw[len(prefix):]}"
    return "float" + raw[1:] if raw.startswith("f") else raw


def _aval(av, names: dict[int, str]) -> tuple[tuple[str, ...], str]:
    if av.Kind() != 0:
        raise ValueError("an input or output is not an array (a token)")
    if av.ShapeLength() > MAX_RANK:
        raise ValueError(f"an array of more than {MAX_RANK} dimensions")
    shape = tuple(av.Shape(i).decode("utf-8") for i in range(av.ShapeLength()))
    return shape, _dtype_name(av.Dtype(), names)


def _tree(node, budget: list[int], depth: int = 0) -> Tree:
    if depth > MAX_TREE_DEPTH:
        raise ValueError("the program's tree is too deep")
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError("the program's tree is too large")
    kind = _KIND_NAMES.get(node.Kind())
    if kind is None or kind == "custom":
        raise ValueError("the program's tree holds a type the grader cannot rebuild")
    n = node.ChildrenLength()
    children = tuple(_tree(node.Children(i), budget, depth + 1) for i in range(n))
    if kind in ("leaf", "none") and n:
        raise ValueError("a leaf of the program's tree has children")
    keys: tuple[str, ...] = ()
    if kind == "dict":
        if node.ChildrenNamesLength() != n:
            raise ValueError("a dict of the program's tree has the wrong number of keys")
        keys = tuple(node.ChildrenNames(i).decode("utf-8") for i in range(n))
        if list(keys) != sorted(set(keys)):
            raise ValueError("a dict of the program's tree has unsorted or repeated keys")
    return Tree(kind, children, keys)


def _length(n: int, most: int, what: str) -> int:
    """A vector's length, refused past what an honest artifact has (lengths are read before
    the entries: a 64 MiB artifact could list 16M offsets to one small table)."""
    if n > most:
        raise ValueError(f"the program lists {n} {what} (at most {most})")
    return n


def _avals(exp, which: str, uniques: list, names: dict[int, str], count: int) -> tuple:
    """In or out avals (`count` of them, the tree's leaves): by index into the unique avals
    (newer artifacts), else inline; when both are there they must agree."""
    n_inline = getattr(exp, f"{which}AvalsLength")()
    if n_inline not in (0, count):
        raise ValueError("the program's trees and shapes disagree")
    inline = tuple(_aval(getattr(exp, f"{which}Avals")(i), names) for i in range(n_inline))
    idx_len = getattr(exp, f"{which}AvalsIdxsLength", None)
    if idx_len is None or idx_len() == 0:
        if len(inline) != count:
            raise ValueError("the program's trees and shapes disagree")
        return inline
    if idx_len() != count:
        raise ValueError("the program's trees and shapes disagree")
    by_idx = []
    for i in range(idx_len()):
        k = getattr(exp, f"{which}AvalsIdxs")(i)
        if not 0 <= k < len(uniques):
            raise ValueError("an aval index is out of range")
        by_idx.append(uniques[k])
    if inline and tuple(by_idx) != inline:
        raise ValueError("the program's inline and indexed shapes disagree")
    return tuple(by_idx)


def read(blob: bytes | bytearray) -> Exported:
    """Read a serialized Exported (ValueError: not one the grader can read)."""
    try:
        return _read(bytearray(blob))
    except ValueError:
        raise
    except Exception as exc:  # a malformed flatbuffer: out-of-range offsets, bad UTF-8, ...
        raise ValueError(f"malformed ({type(exc).__name__})") from None


def _shardings(exp, which: str, count: int) -> None:
    """One sharding (or None) per array, as jax reads them (by index into the unique named
    shardings, else inline): jax refuses an artifact that lists fewer, so the grader does."""
    idx_len = getattr(exp, f"{which}ShardingsIdxsLength", None)
    n = idx_len() if idx_len is not None else 0
    if n:
        unique = exp.UniqueNamedShardingsLength() if hasattr(
            exp, "UniqueNamedShardingsLength") else 0
        if any(not 0 <= getattr(exp, f"{which}ShardingsIdxs")(i) <= unique
               for i in range(_length(n, count, "shardings"))):
            raise ValueError("a sharding index is out of range")
    else:
        n = getattr(exp, f"{which}ShardingsLength")()
    if n != count:
        raise ValueError("the program lists a sharding per array in the wrong number")


def _read(buf: bytearray) -> Exported:
    s = schema()
    names = {v: k for k, v in vars(s.DType).items() if isinstance(v, int)}
    exp = s.Exported.GetRootAs(buf, 0)
    budget = [MAX_TREE_NODES]
    in_tree, out_tree = _tree(exp.InTree(), budget), _tree(exp.OutTree(), budget)
    n_in, n_out = in_tree.n_leaves, out_tree.n_leaves
    n_unique = _length(exp.UniqueAvalsLength(), n_in + n_out, "distinct shapes") if hasattr(
        exp, "UniqueAvalsLength") else 0
    uniques = [_aval(exp.UniqueAvals(i), names) for i in range(n_unique)]
    in_avals = _avals(exp, "In", uniques, names, n_in)
    out_avals = _avals(exp, "Out", uniques, names, n_out)
    _shardings(exp, "In", n_in)
    _shardings(exp, "Out", n_out)
    name = exp.FunctionName()
    if name is None:
        raise ValueError("the program has no function name")
    nr = int(exp.NrDevices())
    if not nr and hasattr(exp, "NrDevicesShort"):
        nr = int(exp.NrDevicesShort())
    kept = tuple(int(exp.ModuleKeptVarIdx(i))
                 for i in range(_length(exp.ModuleKeptVarIdxLength(), n_in, "kept inputs")))
    checks = tuple((int(c.Kind()), (c.CustomCallTarget() or b"").decode("utf-8"))
                   for c in (exp.DisabledChecks(i) for i in range(
                       _length(exp.DisabledChecksLength(), MAX_LISTED, "disabled checks"))))
    listed = {what: _length(getattr(exp, f"{what}Length")(), MAX_LISTED, what.lower())
              for what in ("Platforms", "OrderedEffects", "UnorderedEffects")}
    fields = {
        "version": int(exp.SerializationVersion()),
        "function_name": name.decode("utf-8"),
        "platforms": tuple(exp.Platforms(i).decode("utf-8")
                           for i in range(listed["Platforms"])),
        "ordered_effects": tuple(exp.OrderedEffects(i).TypeName().decode("utf-8")
                                 for i in range(listed["OrderedEffects"])),
        "unordered_effects": tuple(exp.UnorderedEffects(i).TypeName().decode("utf-8")
                                   for i in range(listed["UnorderedEffects"])),
        "nr_devices": nr,
        "in_tree": in_tree, "out_tree": out_tree,
        "in_avals": in_avals, "out_avals": out_avals,
        "module_kept_var_idx": kept,
        "calling_convention_version": int(exp.CallingConventionVersion()),
        "uses_global_constants": bool(exp.UsesGlobalConstants()),
        "disabled_checks": checks,
        "has_vjp": exp.Vjp() is not None,
        "module": exp.MlirModuleSerializedAsNumpy().tobytes()
        if exp.MlirModuleSerializedLength() else b"",
    }
    return Exported(fields)


def native():
    """jaxlib's compiled extension (`_jax`, `xla_extension` before jaxlib 0.5): the portable
    artifact reader, shape refinement."""
    try:
        from jaxlib import _jax
    except ImportError:
        from jaxlib import xla_extension as _jax
    return _jax


def make_context():
    """An MLIR context that parses what jax's own (`mlir.make_ir_context`) parses: the
    upstream dialects jax registers, then StableHLO, CHLO, MHLO and Shardy. A jaxlib laid
    out otherwise gets jax's own context (jax imported: slower, same programs)."""
    try:
        return _own_context()
    except (ImportError, AttributeError):
        from jax._src.interpreters import mlir

        return mlir.make_ir_context()


def _own_context():
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import chlo, mhlo, stablehlo

    registry = ir.DialectRegistry()
    try:
        from jaxlib.mlir._mlir_libs import _jax_mlir_ext as ext
    except ImportError:
        from jaxlib.mlir._mlir_libs import register_jax_dialects as ext
    ext.register_dialects(registry)
    context = ir.Context()
    context.append_dialect_registry(registry)
    context.load_all_available_dialects()
    context.enable_multithreading(False)
    for name in ("sdy", "mpmd"):
        try:
            module = __import__(f"jaxlib.mlir.dialects.{name}", fromlist=["register_dialect"])
        except ImportError:
            continue
        module.register_dialect(context)
    mhlo.register_mhlo_dialect(context)
    chlo.register_dialect(context)
    stablehlo.register_dialect(context)
    return context
