"""Whether a problem's programs ran on XLA last time, so that a one-off grade's stage B imports
jax while it waits for its job.

Stage B imports only numpy and jaxlib (~0.13 s) and jax (~0.3 s) only for a program the
interpreter cannot run (loops, integer division, low-precision types...). Imported after the
job arrives, that is on the grade's critical path: a one-off grade of such a program took
0.2 s longer. Imported while stage B waits for stage A, it is hidden, but on the two cores
stage A's own `import jax` wants it costs ~0.03 s on a program the interpreter runs. So the
parent remembers, per problem, whether the last grade's stage B used XLA, and asks for the
early import only then. A wrong guess costs speed, never a verdict; a submission can steer
the guess for the next grade of its problem on this machine only that way.
"""

from __future__ import annotations

from collections.abc import Iterable

from jaxjudge.isolation import statefile

FILE = "stage-b-engines.json"
MAX_PROBLEMS = 256
STAGE_B_JAX_ENV = "JAXJUDGE_STAGE_B_JAX"  # "1": stage B imports jax before its job


def _known(data: object) -> dict[str, bool]:
    """The entries of the file's JSON that could be a hint (anything else is dropped)."""
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, bool)}


def needs_xla(problem_id: str | None) -> bool:
    """Whether stage B ran this problem's last program on XLA (False when not known)."""
    return bool(problem_id) and _known(
        statefile.read(statefile.state_dir() / FILE)).get(str(problem_id), False)


def remember(problem_id: str, engines: Iterable[str]) -> None:
    """Record what stage B's run used (written only when it changes). Under the state file's
    lock (statefile.update): grades of other problems run in other processes at the same
    time, and a plain read-modify-write would drop what they wrote meanwhile."""
    xla = "xla" in set(engines)
    if _known(statefile.read(statefile.state_dir() / FILE)).get(problem_id) == xla:
        return  # the common case, without the lock

    def change(data: object) -> dict[str, bool] | None:
        known = _known(data)
        if known.get(problem_id) == xla:
            return None
        known.pop(problem_id, None)
        known[problem_id] = xla  # last: the entries are kept in order of their last change
        return dict(list(known.items())[-MAX_PROBLEMS:])  # bounded: longest unchanged go first

    statefile.update(statefile.state_dir() / FILE, change)
