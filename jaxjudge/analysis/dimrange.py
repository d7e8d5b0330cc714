"""A named dimension's legal values, as a problem's `[constraints]` declare them.

`T = [16, 32]` allows every size from 16 to 32; `T = { range = [16, 32], multiple_of = 4 }`
only the multiples of 4 among them (blockwise attention's blocks of 4 keys). It is data, not
prose, so every place that picks or checks a dimension's value reads the same declaration: the
judge's probe sizes (jaxjudge.rules.growth), the tests a generator writes
(jaxjudge.authoring.testgen) and a learner's own inputs (jaxjudge.grading.custom).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator


class DimRange(BaseModel):
    """The values a dimension may take: low <= value <= high, a multiple of `multiple_of`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    range: tuple[StrictInt, StrictInt] = Field(description="[low, high], both included")
    multiple_of: StrictInt = Field(1, ge=1, le=4096,
                                   description="every value is a multiple of this step")

    @model_validator(mode="after")
    def _some_value(self) -> DimRange:
        low, high = self.range
        if not 0 <= low <= high:
            raise ValueError(f"range = [{low}, {high}] needs 0 <= low <= high")
        if self.first(low) is None:
            raise ValueError(f"no multiple of {self.multiple_of} lies in [{low}, {high}]")
        return self

    @classmethod
    def parse(cls, value: Any) -> DimRange | None:
        """`[low, high]` or `{range = [low, high], multiple_of = k}` (ValueError when it is
        malformed); None for a value that declares no dimension (a list of other length)."""
        if isinstance(value, dict):
            return cls.model_validate(value)
        if isinstance(value, list) and len(value) == 2 and all(type(v) is int for v in value):
            return cls(range=(value[0], value[1]))
        return None

    @property
    def low(self) -> int:
        return self.range[0]

    @property
    def high(self) -> int:
        return self.range[1]

    def first(self, at_least: int) -> int | None:
        """The smallest allowed value >= at_least (None when there is none)."""
        step = self.multiple_of
        value = -(-max(at_least, self.low) // step) * step
        return value if value <= self.high else None

    def pick(self, at_least: int) -> int:
        """The smallest allowed value >= at_least, else the largest allowed value."""
        found = self.first(at_least)
        return found if found is not None else self.high // self.multiple_of * self.multiple_of

    def violation(self, name: str, value: int) -> str | None:
        """Why `name = value` is not allowed, in the constraints' own terms (None if it is)."""
        if not self.low <= value <= self.high:
            return f"{name} = {value} is outside the constraints ({self.describe(name)})"
        if value % self.multiple_of:
            return (f"{name} = {value} is not a multiple of {self.multiple_of}, as the "
                    f"constraints require ({self.describe(name)})")
        return None

    def describe(self, name: str) -> str:
        """"16 <= T <= 32, T a multiple of 4"."""
        text = f"{self.low} <= {name} <= {self.high}"
        return text if self.multiple_of == 1 else f"{text}, {name} a multiple of {self.multiple_of}"
