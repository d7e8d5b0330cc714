"""Spec-level `forbidden_primitives`: the traced program uses no primitive of a forbidden family
(a decomposition where a problem teaches the iteration that replaces it, say).

Why spec level: on the CPU every decomposition JAX has (SVD, eigh, eig, QR, LU, Cholesky,
Schur, Hessenberg, tridiagonal) lowers to a LAPACK `custom_call`, and stage B refuses every
custom call (jaxjudge/stages/execute.py), so no exported program the rules see can hold one:
the program level already decides (`pure-jax-program`). What only the trace can give is the
learner-facing reason, naming the primitive and the jnp functions that emit it, before stage B
refuses the program. The summary is untrusted, so a pass stands only when the program-level
requirements in `corroborated_by` pass (jaxjudge.problems.package); a forged summary that
hides a decomposition still meets stage B's refusal.

The primitive names are those of JAX 0.4.38 through 0.10 (a family lists every spelling).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from jaxjudge.rules.jaxpr import MAX_REASON_CHARS, _Malformed, _Table
from jaxjudge.rules.outcome import RuleOutcome
from jaxjudge.rules.registry import RuleOptions, register

Family = Literal["decomposition", "sort", "fft", "random"]

# family -> {primitive: what a learner wrote to get it}
FAMILIES: dict[str, dict[str, str]] = {
    "decomposition": {
        "svd": "an SVD (jnp.linalg.svd, jnp.linalg.norm(w, 2), jnp.linalg.matrix_norm, "
               "jnp.linalg.cond, jnp.linalg.pinv, jnp.linalg.matrix_rank)",
        "eigh": "a symmetric eigendecomposition (jnp.linalg.eigh, jnp.linalg.eigvalsh)",
        "eig": "an eigendecomposition (jnp.linalg.eig, jnp.linalg.eigvals)",
        "qr": "a QR decomposition (jnp.linalg.qr)",
        "geqrf": "a QR decomposition (jnp.linalg.qr)",
        "geqp3": "a pivoted QR decomposition (jax.scipy.linalg.qr with pivoting)",
        "householder_product": "a QR decomposition (jnp.linalg.qr)",
        "lu": "an LU decomposition (jax.scipy.linalg.lu, jnp.linalg.solve, jnp.linalg.det, "
              "jnp.linalg.inv)",
        "cholesky": "a Cholesky decomposition (jnp.linalg.cholesky)",
        "schur": "a Schur decomposition (jax.scipy.linalg.schur)",
        "hessenberg": "a Hessenberg decomposition (jax.scipy.linalg.hessenberg)",
        "tridiagonal": "a tridiagonal reduction (jax.lax.linalg.tridiagonal)",
    },
    "sort": {"sort": "a sort (jnp.sort, jnp.argsort, jax.lax.top_k's fallback, jnp.median)",
             "top_k": "jax.lax.top_k"},
    "fft": {"fft": "an FFT (jnp.fft)"},
    "random": {"random_bits": "random numbers (jax.random)",
               "threefry2x32": "random numbers (jax.random)",
               "rng_bit_generator": "random numbers (jax.lax.rng_bit_generator)"},
}
_NAME = r"^[a-z_][a-z0-9_]*$"


class ForbiddenOptions(RuleOptions):
    families: tuple[Family, ...] = Field(
        default=(), max_length=len(FAMILIES),
        description="forbidden primitive families: decomposition, sort, fft, random")
    primitives: tuple[str, ...] = Field(
        default=(), max_length=32,
        description="more forbidden primitive names, e.g. [cumsum] (names differ across JAX)")
    hint: str = Field(default="", max_length=400, description="what to write instead")

    @model_validator(mode="after")
    def _something(self) -> ForbiddenOptions:
        bad = [p for p in self.primitives if not re.match(_NAME, p)]
        if bad:
            raise ValueError(f"primitive names are lowercase identifiers, not {bad}")
        if not self.families and not self.primitives:
            raise ValueError("give at least one family or primitive to forbid")
        return self


def forbidden(families: tuple[str, ...], primitives: tuple[str, ...]) -> dict[str, str]:
    """primitive -> what it is, for the options given."""
    out = {p: f"the primitive {p}" for p in primitives}
    for family in families:
        out.update(FAMILIES[family])
    return out


@register("forbidden_primitives", "spec", ForbiddenOptions)
def check_forbidden_primitives(summary: object, *, families: tuple[str, ...] = (),
                               primitives: tuple[str, ...] = (), hint: str = "") -> RuleOutcome:
    """The traced program uses no primitive of the forbidden families (at any nesting depth).

    Custom-derivative functions and every nested jaxpr (cond branches, loop bodies, checkpoint
    regions, nested jits) are searched; the message names what was found."""
    banned = forbidden(tuple(families), tuple(primitives))
    if summary is None:
        return RuleOutcome(False, "Your function could not be traced, so the primitives it uses "
                                  "could not be checked: fix the error reported first.")
    if isinstance(summary, dict) and "omitted" in summary:
        reason = summary.get("omitted")
        why = f" ({reason[:MAX_REASON_CHARS]})" if isinstance(reason, str) and reason else ""
        return RuleOutcome(False, f"The traced program is too large to summarize{why}, so the "
                                  "primitives it uses could not be checked.")
    try:
        table = _Table(summary)
        names = {e["primitive"] for j in table.reachable([table.root]) for e in table.eqns[j]}
    except _Malformed as exc:
        return RuleOutcome(False, f"The trace summary could not be read ({exc}), so the "
                                  "primitives it uses could not be checked.")
    found = sorted(names & set(banned))
    if found:
        what = "; ".join(f"{banned[p]} (primitive {p})" for p in found)
        return RuleOutcome(False, f"Your traced program uses {what}, which this problem "
                                  f"forbids. {hint}".strip())
    listed = ", ".join(families) if families else ", ".join(primitives)
    return RuleOutcome(True, f"Your traced program uses no forbidden primitive ({listed}).")
