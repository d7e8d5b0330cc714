"""Render the service's OpenAPI schema as one MyST Markdown page.

The schema comes from `jaxjudge.service.main.create_app()` itself (what a running server serves at
/openapi.json), so the page cannot drift from the code. `create_app` is pure: building the
schema opens no database and starts no worker pool (both happen in the ASGI lifespan, which
never runs here). The renderer is deliberately small: operations, their parameters, bodies and
responses, then every component schema as a table of its fields. Cross-links are `{ref}` roles
to labels this page defines, so a dangling `$ref` fails the strict build.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")
Schema = dict[str, Any]


def build_spec() -> dict[str, Any]:
    """The OpenAPI document of an app built with default settings (a throw-away SQLite URL)."""
    from jaxjudge.service.config import Settings
    from jaxjudge.service.main import create_app

    with tempfile.TemporaryDirectory(prefix="jaxjudge-docs-") as tmp:
        settings = Settings(
            database_url=f"sqlite:///{tmp}/docs.db",
            warm_pool=False,
            workers=1,
        )
        return create_app(settings).openapi()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def schema_label(name: str) -> str:
    return f"openapi-schema-{_slug(name)}"


def operation_label(method: str, path: str) -> str:
    return f"openapi-{method}-{_slug(path) or 'root'}"


def _cell(text: str) -> str:
    """Text safe inside one Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _ref(schema: Schema) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


def type_of(schema: Schema) -> str:
    """A short human type: `string`, `array of Report`, `Verdict or null`, ..."""
    name = _ref(schema)
    if name:
        return f"{{ref}}`{name} <{schema_label(name)}>`"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            parts = [type_of(s) for s in schema[key]]
            return " or ".join(dict.fromkeys(parts))
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return type_of(schema["allOf"][0])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {type_of(schema.get('items', {}))}"
    if kind == "object" or "additionalProperties" in schema:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return f"object of {type_of(extra)}"
        return "object"
    if isinstance(kind, str):
        fmt = schema.get("format")
        return f"{kind} ({fmt})" if fmt else kind
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    return "any JSON value"


def _constraints(schema: Schema) -> list[str]:
    """Enum values, bounds and defaults, from the schema or its non-null alternative."""
    branches = [schema] + [
        s for s in schema.get("anyOf", []) if isinstance(s, dict) and s.get("type") != "null"
    ]
    notes: list[str] = []
    for s in branches:
        if "enum" in s:
            notes.append("One of " + ", ".join(f"`{json.dumps(v)}`" for v in s["enum"]) + ".")
        for key, word in (
            ("minLength", "At least {} characters."),
            ("maxLength", "At most {} characters."),
            ("minimum", "Minimum {}."),
            ("maximum", "Maximum {}."),
            ("exclusiveMinimum", "Greater than {}."),
            ("exclusiveMaximum", "Less than {}."),
            ("pattern", "Matches `{}`."),
        ):
            if key in s:
                notes.append(word.format(s[key]))
    if "default" in schema:
        notes.append(f"Default `{json.dumps(schema['default'])}`.")
    return notes


def _describe(schema: Schema, fallback: str = "") -> str:
    text = str(schema.get("description") or fallback)
    return _cell(" ".join([text, *_constraints(schema)]).strip()) or "-"


def _table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> list[str]:
    head = list(header)
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _body_type(content: dict[str, Any]) -> str:
    parts = [f"{type_of(c.get('schema', {}))} (`{mime}`)" for mime, c in content.items()]
    return ", ".join(parts) if parts else "-"


def render_operation(method: str, path: str, op: dict[str, Any], bearer_note: str) -> list[str]:
    out = [f"({operation_label(method, path)})=", f"### `{method.upper()} {path}`", ""]
    out += [op.get("summary", ""), ""]
    if op.get("description"):
        out += [" ".join(op["description"].split()), ""]
    auth = "bearer token" if op.get("security") else "none"
    out += [f"**Authentication:** {auth}" + (f" ({bearer_note})" if op.get("security") else ""), ""]
    params = op.get("parameters", [])
    if params:
        rows = []
        for p in params:
            schema = {**p.get("schema", {}), **({"description": p["description"]}
                                                 if p.get("description") else {})}
            rows.append([f"`{p['name']}`", p.get("in", ""), _cell(type_of(schema)),
                         "yes" if p.get("required") else "no", _describe(schema)])
        out += ["**Parameters**", "", *_table(["name", "in", "type", "required", "description"],
                                              rows)]
    body = op.get("requestBody")
    if body:
        required = "required" if body.get("required") else "optional"
        out += [f"**Request body** ({required}): {_body_type(body.get('content', {}))}", ""]
    responses = op.get("responses", {})
    out += ["**Responses**", ""]
    out += _table(
        ["status", "meaning", "body"],
        (
            [f"`{code}`", _cell(r.get("description", "")), _cell(_body_type(r.get("content", {})))]
            for code, r in sorted(responses.items())
        ),
    )
    return out


def render_schema(name: str, schema: Schema) -> list[str]:
    out = [f"({schema_label(name)})=", f"### {name}", ""]
    if schema.get("description"):
        out += [" ".join(schema["description"].split()), ""]
    props: dict[str, Schema] = schema.get("properties", {})
    if props:
        required = set(schema.get("required", []))
        out += _table(
            ["field", "type", "required", "description"],
            (
                [f"`{field}`", _cell(type_of(s)), "yes" if field in required else "no",
                 _describe(s)]
                for field, s in props.items()
            ),
        )
        if schema.get("additionalProperties") is False:
            out += ["No other fields are accepted.", ""]
    else:
        out += [f"Type: {type_of(schema)}. {_describe(schema, '')}".rstrip(" -"), ""]
    return out


def render(spec: dict[str, Any]) -> str:
    """The whole page, as MyST Markdown."""
    info = spec.get("info", {})
    schemes = spec.get("components", {}).get("securitySchemes", {})
    bearer_note = " ".join(
        str(s.get("description", "")) for s in schemes.values() if s.get("scheme") == "bearer"
    ).strip().rstrip(".")
    bearer_note = bearer_note[:1].lower() + bearer_note[1:] if bearer_note else "when auth is on"
    out = [
        "% Generated by docs/_ext/openapi_md.py at build time: edit the code, not this file.",
        "",
        "# OpenAPI reference",
        "",
        "Rendered when the documentation is built, from the schema the service itself serves "
        "at `/openapi.json` (interactive at `/docs` on a running server): "
        f"{info.get('title', '')} API {info.get('version', '')}, OpenAPI "
        f"{spec.get('openapi', '')}. The [HTTP API](../http-api.md) page explains the same "
        "endpoints with examples. Whatever a response below names as its body, every error "
        "is answered with an {ref}`ErrorBody <" + schema_label("ErrorBody") + ">` "
        "(see [Errors](../http-api.md#errors)).",
        "",
        "## Operations",
        "",
    ]
    ops = [
        (method, path, item[method])
        for path, item in spec.get("paths", {}).items()
        for method in METHODS
        if method in item
    ]
    out += _table(
        ["method", "path", "summary"],
        (
            [method.upper(), f"{{ref}}`{path} <{operation_label(method, path)}>`",
             _cell(op.get("summary", ""))]
            for method, path, op in ops
        ),
    )
    for method, path, op in ops:
        out += render_operation(method, path, op, bearer_note)
    out += ["## Schemas", ""]
    for name, schema in sorted(spec.get("components", {}).get("schemas", {}).items()):
        out += render_schema(name, schema)
    return "\n".join(out).rstrip() + "\n"


def write_page(target: Path) -> bool:
    """Write the page if its text changed (an unchanged file keeps its mtime, so incremental
    builds do not re-read it). Returns whether it was written."""
    text = render(build_spec())
    if target.exists() and target.read_text() == text:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return True
