"""Document pydantic models' fields in autodoc entries, without another Sphinx extension.

autodoc sees a pydantic model's fields neither as attributes nor in a useful signature (it is
`(**data)`), so a `Report` would be documented without `verdict` or `tests`. This appends one
line per field (name, type, default or "required", description) to the model's docstring and
drops the `(**data)` signature, so the field list is the one place that says how to build it.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

_MODULE_PATH = re.compile(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)")


def _is_model(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseModel) and obj is not BaseModel


def _type_name(annotation: Any) -> str:
    if annotation is None or annotation is type(None):
        return "None"
    name = annotation.__name__ if isinstance(annotation, type) else repr(annotation)
    name = name.replace("typing.", "").replace("NoneType", "None")
    return _MODULE_PATH.sub(r"\1", name)


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:  # a factory that wants the validated data
            return "default computed"
        return f"default ``{value!r}``"
    if field.default is PydanticUndefined:
        return "required"
    return f"default ``{field.default!r}``"


def field_lines(model: type[BaseModel]) -> list[str]:
    """reStructuredText lines listing the model's fields."""
    lines = ["", "**Fields**", ""]
    for name, field in model.model_fields.items():
        text = f"- ``{name}`` (``{_type_name(field.annotation)}``, {_default(field)})"
        if field.description:
            text += " — " + " ".join(field.description.split())
        lines.append(text)
    return [*lines, ""]


def _docstring(app: Any, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    if what in ("class", "exception") and _is_model(obj) and obj.model_fields:
        lines.extend(field_lines(obj))


def _signature(app: Any, what: str, name: str, obj: Any, options: Any, signature: str | None,
               return_annotation: str | None) -> tuple[str, str | None] | None:
    if what == "class" and _is_model(obj):
        return "", None
    return None


def connect(app: Any) -> None:
    """Hook the two autodoc events (called from conf.py's setup())."""
    app.connect("autodoc-process-docstring", _docstring)
    app.connect("autodoc-process-signature", _signature)
