"""Words the rules' messages share."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["listed"]


def listed(items: Sequence[object]) -> str:
    """"a", "a and b", "a, b and c"."""
    words = [str(i) for i in items]
    return " and ".join(words) if len(words) < 3 else f"{', '.join(words[:-1])} and {words[-1]}"
