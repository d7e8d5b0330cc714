"""Sphinx configuration for jaxjudge's documentation (MyST Markdown pages, Furo theme).

Build with `make docs` (strict: every warning fails). Two pages are generated here, at build
time, from the code itself: the OpenAPI reference from `jaxjudge.service.main.create_app()` and,
through autodoc, the library reference from `jaxjudge`'s docstrings.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sphinx.application import Sphinx

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))  # this checkout's `jaxjudge`, not an installed copy
sys.path.insert(0, str(DOCS / "_ext"))

import openapi_md  # noqa: E402  (needs the path above)
import pydantic_fields  # noqa: E402

project = "jaxjudge"
author = "the jaxjudge authors"
copyright = "the jaxjudge authors; Apache-2.0"

extensions = ["myst_parser", "sphinx.ext.autodoc"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext", "Thumbs.db", ".DS_Store"]

# Markdown: `[text](#heading)` and `[text](page.md#heading)` links are checked against real
# headings (a broken one is a warning, so it fails the strict build); $...$ math as in problem
# statements; ::: fences for admonitions.
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3

# Docstrings use Markdown-style `code` spans: render them as code, not as RST's citations.
default_role = "code"
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True
autodoc_default_options = {"exclude-members": "model_config, model_fields, model_computed_fields"}

html_theme = "furo"
html_title = "jaxjudge"
html_static_path: list[str] = []
html_show_sourcelink = False
pygments_style = "friendly"
pygments_dark_style = "monokai"


def setup(app: Sphinx) -> None:
    """List a pydantic model's fields in its reference entry (autodoc shows none of them)."""
    pydantic_fields.connect(app)


# The HTTP reference page, rendered from the schema the service itself serves at /openapi.json.
openapi_md.write_page(DOCS / "generated" / "openapi.md")
