"""Small integer expressions over a problem's named dimensions, e.g. "n*n" or "T // 4".

Problem authors write them in rule options (`problem.toml`); they are parsed once at load with
Python's `ast` and a whitelist (names, integer literals, + - * // % and parentheses), never
evaluated with `eval`, and their names are checked against the problem's dimensions.
"""

from __future__ import annotations

import ast
from typing import Any

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

MAX_CHARS = 200
_OPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}


class Expr:
    """A parsed expression; `names` are the dimensions it uses, `value(dims)` evaluates it."""

    def __init__(self, text: str) -> None:
        if not isinstance(text, str) or not text.strip() or len(text) > MAX_CHARS:
            raise ValueError(f"an expression must be a non-empty string of <= {MAX_CHARS} chars")
        try:
            tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as exc:
            raise ValueError(f"{text!r} is not an expression ({exc.msg})") from None
        self.names: set[str] = set()
        self._check(tree, text)
        self.text = text.strip()
        self._tree = tree

    def _check(self, node: ast.AST, text: str) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, ast.Name):
                self.names.add(n.id)
            elif isinstance(n, ast.Constant) and type(n.value) is int:
                pass
            elif isinstance(n, ast.BinOp) and type(n.op) in _OPS:
                stack += [n.left, n.right]
            elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
                stack.append(n.operand)
            else:
                raise ValueError(f"{text!r}: only names, integers, + - * // % and parentheses")

    def value(self, dims: dict[str, int]) -> int:
        """Evaluate with `dims` (KeyError for a missing name, ZeroDivisionError as Python)."""
        stack: list[tuple[ast.AST, bool]] = [(self._tree, False)]
        out: list[int] = []
        while stack:
            n, done = stack.pop()
            if isinstance(n, ast.Name):
                out.append(dims[n.id])
            elif isinstance(n, ast.Constant):
                out.append(int(n.value))
            elif isinstance(n, ast.UnaryOp):
                if done:
                    out.append(-out.pop())
                else:
                    stack += [(n, True), (n.operand, False)]
            elif isinstance(n, ast.BinOp):
                if done:
                    b, a = out.pop(), out.pop()
                    out.append(_OPS[type(n.op)](a, b))
                else:
                    stack += [(n, True), (n.right, False), (n.left, False)]
        return out[0]

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> Any:
        """Validated from a string in problem.toml; dumped back as that string."""
        return core_schema.no_info_after_validator_function(
            cls, core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(str),
        )
