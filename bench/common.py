"""What the benchmark scripts share: the machine line every result starts with, and a new
correct program per tag (so that neither a report nor a program cache can answer a grade)."""

from __future__ import annotations

import contextlib
import os
import platform
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROBLEM_ID = "rematerialized-mlp-block"
REFERENCE = (REPO / "problems" / PROBLEM_ID / "reference.py").read_text(encoding="utf-8")


def machine(*extra: str) -> str:
    """Cores, CPU model, RAM, kernel, Python and jax, then `extra` (other versions)."""
    model = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return ", ".join([
        f"{os.cpu_count()} cores ({model})", f"{mem:.1f} GiB RAM",
        f"Linux {platform.release()}", f"Python {platform.python_version()}",
        f"jax {metadata.version('jax')}", *extra])


def loadavg() -> str:
    one, five, _ = os.getloadavg()
    return f"{one:.2f} (1 min), {five:.2f} (5 min)"


def new_program(tag: str) -> str:
    """The reference with `0 * sum(y) * tag` in its loss: the same numbers, a different
    exported program (the constant is in it) and a different source for every tag."""
    old = "    return jnp.mean((out - y) ** 2)\n"
    assert old in REFERENCE, "reference.py changed: update bench/common.py"
    new = f"    return jnp.mean((out - y) ** 2) + 0.0 * jnp.sum(y) * {tag}\n"
    return REFERENCE.replace(old, new)
