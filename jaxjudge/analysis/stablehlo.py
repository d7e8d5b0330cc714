"""A small parser for MLIR modules printed in *generic op form* (what stage B writes).

Why our own: the text comes out of a sandbox that ran submission-shaped programs, so the parent
must read it without loading MLIR bindings, without eval, and without recursion a deep input can
blow. The generic form is regular enough for that: every op is

    %r:2, %s = "dialect.op"(%a, %b#1) [^succ] <{props}> ({regions}) {attrs} : (types) -> types

and we only need the dataflow skeleton: op names, result and operand value names, the few
attributes that link functions (`sym_name`, `callee`), small constants and enum attributes
(loop bounds and compare directions), and nested regions with block arguments.
Types and attribute values are skipped (strings stay opaque). Every size and depth is capped; any
violation raises `ParseError` with a short reason.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import NamedTuple

MAX_TEXT_CHARS = 8 * 1024 * 1024  # what stage B lets through (grade.MAX_PROGRAM_TEXT)
MAX_ATTR_TOKENS = 4096  # tokens of one attribute dict kept for reading sym_name/callee
MAX_DENSE_TOKENS = 2 * 1024 + 2  # tokens of a constant's payload kept: a list of 1,024 numbers
MAX_OPS = 200_000
MAX_VALUES = 1_000_000
MAX_REGION_DEPTH = 128
MAX_BRACKET_DEPTH = 256
MAX_TYPE_CHARS = 4096  # one op's printed function type kept for rules that read element types


class ParseError(ValueError):
    """The text is not a module in generic op form we can read (or exceeds a cap)."""


@dataclass
class Block:
    args: list[str] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    arg_types: list[str] = field(default_factory=list)  # each argument's printed type


@dataclass
class Op:
    name: str
    results: list[str]
    operands: list[str]
    # Attribute values we need: symbol references and string attributes by key, e.g.
    # {"callee": "block", "sym_name": "main"}. Keys come from both `<{props}>` and `{attrs}`.
    attrs: dict[str, str] = field(default_factory=dict)
    regions: list[list[Block]] = field(default_factory=list)
    # The op's function type as printed, e.g. "(tensor<2x3xf32>, tensor<3x4xf32>) ->
    # tensor<2x4xf32>" (spaces dropped; capped at MAX_TYPE_CHARS, "" beyond): see `tensor_types`.
    type: str = ""
    # Where the op's attribute dicts (`<{props}>`, `{attrs}`) lie in the text, as (start, end)
    # offsets: rules that compare programs op by op read every attribute from there.
    spans: list[tuple[int, int]] = field(default_factory=list)
    # The op's place in the module, in printed (pre-)order: 0 is the module op itself. Stage B
    # numbers its source-location table the same way (jaxjudge.grading.srclines).
    index: int = field(default=-1, compare=False)

    def scalar_int(self) -> int | None:
        """A `stablehlo.constant`'s value when it is one integer (`dense<5>`), else None."""
        raw = self.attrs.get("value", "")
        body = raw[6:-1] if raw.startswith("dense<") and raw.endswith(">") else ""
        try:
            return int(body) if body and len(body) <= 20 else None
        except ValueError:
            return None

    def result_types(self) -> list[TensorType]:
        """The result tensor types (what follows the arrow); one of unknown size when the type
        was too long to keep."""
        if self.type == TYPE_TOO_LONG:
            return [TensorType((None,), "?")]
        _, arrow, res = self.type.rpartition("->")
        return tensor_types(res) if arrow else []

    def operand_types(self) -> list[TensorType]:
        if self.type == TYPE_TOO_LONG:
            return [TensorType((None,), "?")]
        head, arrow, _ = self.type.rpartition("->")
        return tensor_types(head) if arrow else []


class TensorType(NamedTuple):
    """`tensor<2x?x4xf32>` -> dims (2, None, 4), element "f32"."""

    dims: tuple[int | None, ...]
    element: str

    def elements(self) -> int | None:
        """The element count, None when a dimension is dynamic."""
        n = 1
        for d in self.dims:
            if d is None:
                return None
            n *= d
        return n


TYPE_TOO_LONG = "?"  # an op's type past MAX_TYPE_CHARS: its sizes are unknown, not zero


def tensor_types(text: str) -> list[TensorType]:
    """Every `tensor<...>` in a printed type, in order (encodings after a comma dropped). The
    element type may nest brackets (`complex<f32>`); a tensor that cannot be read is returned
    with unknown dims, so a rule that sizes values fails it rather than skipping it."""
    out = []
    i = 0
    while True:
        start = text.find("tensor<", i)
        if start < 0:
            return out
        j, depth = start + len("tensor<"), 1
        while j < len(text) and depth:
            depth += {"<": 1, ">": -1}.get(text[j], 0)
            j += 1
        body = text[start + len("tensor<"): j - 1].split(",")[0]
        i = j
        dims: list[str] = []
        element = body
        while "x" in element and not element.startswith("complex<"):
            head, _, element = element.partition("x")
            dims.append(head)
        try:
            shape = tuple(None if d == "?" else int(d) for d in dims)
        except ValueError:
            shape = (None,)
        out.append(TensorType(shape, element))


@dataclass
class Module:
    ops: list[Op]  # the top-level ops (normally one builtin.module)

    def functions(self) -> dict[str, Op]:
        """Every func.func in the module, by sym_name (first one wins on duplicates)."""
        found: dict[str, Op] = {}
        stack = list(reversed(self.ops))
        while stack:
            op = stack.pop()
            if op.name == "func.func":
                name = op.attrs.get("sym_name")
                if name is not None and name not in found:
                    found[name] = op
                continue  # functions do not nest
            for region in reversed(op.regions):
                for block in reversed(region):
                    stack.extend(reversed(block.ops))
        return found


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<value>%[\w$.\-]+(?:\#\d+)?)
  | (?P<label>\^[\w$.\-]+)
  | (?P<symbol>@(?:[\w$.\-]+|"(?:[^"\\\n]|\\.)*"))
  | (?P<arrow>->)
  | (?P<punct>[(){}\[\]<>,:=])
  | (?P<word>[^\s(){}\[\]<>,:=%"^@]+)
    """,
    re.VERBOSE,
)


class _Tok(NamedTuple):
    kind: str
    text: str
    pos: int


class _Lexer:
    """Tokens on demand (a small lookahead buffer), so memory does not grow with the text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.buffer: deque[_Tok] = deque()

    def _scan(self) -> _Tok | None:
        text = self.text
        while self.pos < len(text):
            m = _TOKEN_RE.match(text, self.pos)
            if m is None:
                raise ParseError(f"unexpected character {text[self.pos]!r} at offset {self.pos}")
            start, self.pos = self.pos, m.end()
            kind = m.lastgroup or "word"
            if kind != "ws":
                return _Tok(kind, m.group(), start)
        return None

    def peek(self, k: int = 0) -> _Tok | None:
        while len(self.buffer) <= k:
            t = self._scan()
            if t is None:
                return None
            self.buffer.append(t)
        return self.buffer[k]

    def next(self) -> _Tok | None:
        if self.buffer:
            return self.buffer.popleft()
        return self._scan()


_OPENERS = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSERS = {")", "]", "}", ">"}


class _Parser:
    def __init__(self, text: str) -> None:
        self.lexer = _Lexer(text)
        self.n_ops = 0
        self.n_values = 0
        self.end = 0  # the offset just past the last token read

    # -- token helpers ---------------------------------------------------------------------
    def peek(self, k: int = 0) -> _Tok | None:
        return self.lexer.peek(k)

    def is_punct(self, text: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.kind == "punct" and t.text == text

    def next(self) -> _Tok:
        t = self.lexer.next()
        if t is None:
            raise ParseError("unexpected end of text")
        self.end = t.pos + len(t.text)
        return t

    def expect(self, text: str) -> _Tok:
        t = self.next()
        if t.kind != "punct" or t.text != text:
            raise ParseError(f"expected {text!r} at offset {t.pos}, found {t.text[:40]!r}")
        return t

    def skip_balanced(self) -> list[_Tok]:
        """Skip one bracketed group starting at the current opener; return the tokens inside."""
        start = self.next()
        if start.kind != "punct" or start.text not in _OPENERS:
            raise ParseError(f"expected a bracket at offset {start.pos}")
        stack = [_OPENERS[start.text]]
        inside: list[_Tok] = []
        while stack:
            t = self.next()
            if len(inside) < MAX_ATTR_TOKENS:
                inside.append(t)
            if t.kind != "punct":
                continue
            if t.text in _OPENERS and not (t.text == "<" and start.text != "<"):
                stack.append(_OPENERS[t.text])
                if len(stack) > MAX_BRACKET_DEPTH:
                    raise ParseError("brackets nested too deeply")
            elif t.text in _CLOSERS and not (t.text == ">" and stack[-1] != ">"):
                if t.text != stack[-1]:
                    raise ParseError(f"unbalanced {t.text!r} at offset {t.pos}")
                stack.pop()
        return inside[:-1] if not stack and inside and inside[-1] is t else inside

    def count_value(self, k: int = 1) -> None:
        self.n_values += k
        if self.n_values > MAX_VALUES:
            raise ParseError(f"more than {MAX_VALUES} values")

    # -- grammar pieces --------------------------------------------------------------------
    def results(self) -> list[str]:
        names: list[str] = []
        t = self.peek()
        if t is None or t.kind != "value":
            return names
        while True:
            t = self.next()
            if t.kind != "value" or "#" in t.text:
                raise ParseError(f"bad result name at offset {t.pos}")
            if self.is_punct(":"):
                self.next()
                num = self.next()
                digits = num.kind == "word" and num.text.isascii() and num.text.isdigit()
                if not digits or len(num.text) > 7:
                    raise ParseError(f"bad result count at offset {num.pos}")
                count = int(num.text)
                self.count_value(count)
                names.extend(f"{t.text}#{k}" for k in range(count))
            else:
                self.count_value()
                names.append(t.text)
            if self.is_punct(","):
                self.next()
                continue
            self.expect("=")
            return names

    def operands(self) -> list[str]:
        self.expect("(")
        names: list[str] = []
        if self.is_punct(")"):
            self.next()
            return names
        while True:
            t = self.next()
            if t.kind != "value":
                raise ParseError(f"expected an operand at offset {t.pos}")
            names.append(t.text)
            t = self.next()
            if t.kind == "punct" and t.text == ")":
                return names
            if t.kind != "punct" or t.text != ",":
                raise ParseError(f"expected ',' or ')' at offset {t.pos}")

    @staticmethod
    def read_attrs(toks: list[_Tok], into: dict[str, str]) -> None:
        """Pick `key = @sym` and `key = "string"` pairs at the top level of an attribute dict."""
        depth = 0
        for j, t in enumerate(toks):
            if t.kind == "punct" and t.text in _OPENERS:
                depth += 1
            elif t.kind == "punct" and t.text in _CLOSERS:
                depth -= 1
            elif (
                depth == 0
                and t.kind == "word"
                and j + 2 < len(toks)
                and toks[j + 1].text == "="
                and toks[j + 2].kind in ("symbol", "string")
            ):
                value = toks[j + 2].text
                value = value[1:] if value.startswith("@") else value
                if value.startswith('"') and value.endswith('"') and len(value) >= 2:
                    value = value[1:-1]
                into.setdefault(t.text, value)
            elif (
                depth == 0
                and t.kind == "word"
                and j + 6 < len(toks)
                and toks[j + 1].text == "="
                and toks[j + 2].text.startswith("#")
                and toks[j + 3].text == "<"
                and toks[j + 4].kind == toks[j + 5].kind == "word"
                and toks[j + 6].text == ">"
            ):
                # An enum attribute, e.g. `comparison_direction = #stablehlo<comparison_direction
                # LT>`: its value ("LT") by key (loop bounds read a compare's direction).
                into.setdefault(t.text, toks[j + 5].text)
            elif (
                depth == 0
                and t.text == "value"
                and j + 3 < len(toks)
                and toks[j + 1].text == "="
                and toks[j + 2].text == "dense"
                and toks[j + 3].text == "<"
            ):
                # A constant's payload, e.g. "dense<5>" (loop bounds), or a short list such
                # as `np.arange(T)` (a table a loop reads its step index from); no larger
                # than the program text that printed it.
                end = next((k for k in range(j + 4, min(len(toks), j + 5 + MAX_DENSE_TOKENS))
                            if toks[k].text == ">"), None)
                if end is not None:
                    payload = "".join(x.text for x in toks[j + 4 : end])
                    into.setdefault("value", f"dense<{payload}>")

    def read_type(self) -> str:
        """Read the `: (..) -> ..` trailer up to what starts the next op or ends the region;
        return it without spaces ("" if longer than MAX_TYPE_CHARS)."""
        depth = 0
        parts: list[str] = []
        size = 0
        while True:
            t = self.peek()
            if t is None:
                break
            if depth == 0 and (
                t.kind in ("value", "string", "label") or (t.kind == "punct" and t.text == "}")
            ):
                break
            self.next()
            if size <= MAX_TYPE_CHARS:
                parts.append(t.text)
                size += len(t.text)
            if t.kind != "punct":
                continue
            if t.text in _OPENERS:
                depth += 1
                if depth > MAX_BRACKET_DEPTH:
                    raise ParseError("type nested too deeply")
            elif t.text in _CLOSERS:
                depth -= 1
                if depth < 0:
                    raise ParseError(f"unbalanced {t.text!r} at offset {t.pos}")
        return "".join(parts) if size <= MAX_TYPE_CHARS else TYPE_TOO_LONG

    def block_header(self) -> tuple[list[str], list[str]]:
        """`^bb0(%a: type, %b: type):` -> (["%a", "%b"], their types) (the label token is
        already consumed)."""
        args: list[str] = []
        types: list[str] = []
        if self.is_punct("("):
            self.next()
            while not self.is_punct(")"):
                t = self.next()
                if t.kind != "value" or "#" in t.text:
                    raise ParseError(f"expected a block argument at offset {t.pos}")
                self.count_value()
                args.append(t.text)
                self.expect(":")
                depth = 0
                parts: list[str] = []
                while True:  # the argument's type (and maybe a loc(...))
                    t = self.peek()
                    if t is None:
                        raise ParseError("unexpected end of text in a block header")
                    if depth == 0 and t.kind == "punct" and t.text in (",", ")"):
                        break
                    self.next()
                    if sum(map(len, parts)) < MAX_TYPE_CHARS:
                        parts.append(t.text)
                    if t.kind == "punct" and t.text in _OPENERS:
                        depth += 1
                        if depth > MAX_BRACKET_DEPTH:
                            raise ParseError("type nested too deeply")
                    elif t.kind == "punct" and t.text in _CLOSERS:
                        depth -= 1
                types.append("".join(parts))
                if self.is_punct(","):
                    self.next()
            self.expect(")")
        self.expect(":")
        return args, types

    def op_head(self) -> Op:
        results = self.results()
        t = self.next()
        if t.kind != "string":
            raise ParseError(f"expected an op name at offset {t.pos}, found {t.text[:40]!r}")
        self.n_ops += 1
        if self.n_ops > MAX_OPS:
            raise ParseError(f"more than {MAX_OPS} ops")
        op = Op(name=t.text[1:-1], results=results, operands=self.operands(),
                index=self.n_ops - 1)
        if self.is_punct("["):
            self.skip_balanced()  # successors
        if self.is_punct("<") and self.is_punct("{", 1):
            self.next()
            start = self.end
            self.read_attrs(self.skip_balanced(), op.attrs)
            op.spans.append((start, self.end))
            self.expect(">")
        return op

    def op_tail(self, op: Op) -> None:
        if self.is_punct("{"):
            start = self.end
            self.read_attrs(self.skip_balanced(), op.attrs)
            op.spans.append((start, self.end))
        self.expect(":")
        op.type = self.read_type()

    # -- the driver: an explicit stack of ops whose regions are being read -----------------
    def module(self) -> Module:
        top: list[Op] = []
        # Each frame: the op whose regions we are inside; its last region's last block is where
        # parsed ops go.
        stack: list[Op] = []
        while True:
            t = self.peek()
            if not stack:
                if t is None:
                    return Module(top)
            elif t is None:
                raise ParseError("unexpected end of text inside a region")
            if not stack and t is not None and t.kind == "punct" and t.text == "{":
                self.skip_balanced()  # a trailing `{-# dialect_resources ... #-}` section
                continue
            if stack and t is not None and t.kind == "punct" and t.text == "}":
                self.next()  # end of a region
                if self.is_punct(","):
                    self.next()
                    self.expect("{")
                    stack[-1].regions.append([Block()])
                    continue
                self.expect(")")
                op = stack.pop()
                self.op_tail(op)
                (stack[-1].regions[-1][-1].ops if stack else top).append(op)
                continue
            if stack and t is not None and t.kind == "label":
                self.next()
                region = stack[-1].regions[-1]
                names, types = self.block_header()
                new = Block(args=names, arg_types=types)
                if len(region) == 1 and not region[0].ops and not region[0].args:
                    region[0] = new  # the entry block's label
                else:
                    region.append(new)
                continue
            op = self.op_head()
            if self.is_punct("(") and self.is_punct("{", 1):
                self.next()
                self.next()
                op.regions.append([Block()])
                stack.append(op)
                if len(stack) > MAX_REGION_DEPTH:
                    raise ParseError("regions nested too deeply")
                continue
            self.op_tail(op)
            (stack[-1].regions[-1][-1].ops if stack else top).append(op)


# Texts parsed within `parsed_once()`, by text (None outside: every call parses).
_PARSED: ContextVar[dict[str, Module] | None] = ContextVar("jaxjudge_parsed", default=None)


@contextmanager
def parsed_once(known: dict[str, Module] | None = None) -> Iterator[None]:
    """Within it, `parse_module` parses each distinct text once and hands the same Module back
    after (no reader changes a Module). One grade's program rules and memory profile read the
    same programs again and again: up to 61 parses of 2-32 KB texts per grade of the 13
    problems, 3-35 of them the same text. Scoped to a grade, so nothing outlives it. `known`:
    texts parsed already (jaxjudge.grading.prefetch), each module keyed by its exact text."""
    token = _PARSED.set(dict(known or {}))
    try:
        yield
    finally:
        _PARSED.reset(token)


def parse_module(text: str) -> Module:
    """Parse generic-op-form MLIR text. Raises ParseError (only) on anything unexpected."""
    memo = _PARSED.get()
    found = memo.get(text) if memo is not None and isinstance(text, str) else None
    if found is not None:
        return found
    module = _parse_module(text)
    if memo is not None:
        memo[text] = module
    return module


def _parse_module(text: str) -> Module:
    if not isinstance(text, str):
        raise ParseError("the program text is not a string")
    if len(text) > MAX_TEXT_CHARS:
        raise ParseError(f"the program text is longer than {MAX_TEXT_CHARS} characters")
    try:
        module = _Parser(text).module()
    except ParseError:
        raise
    except (ValueError, IndexError, RecursionError, MemoryError) as exc:  # defensive: never escape
        raise ParseError(f"unreadable program ({type(exc).__name__})") from None
    if not module.ops:
        raise ParseError("the program text holds no op")
    return module
