"""ProcessGrader (jaxjudge/grading/processes.py): real worker processes, each a warm Grader.

It must grade like a Grader, from many threads at once, on every worker; a worker killed in
the middle of a grade gives that grade `internal_error` (our failure, not the learner's) and is
replaced; a caller's error is raised in the caller; closing leaves no process behind.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from jaxjudge import Limits, Verdict, load_problem
from jaxjudge.grading.custom import CustomInputError
from jaxjudge.grading.grader import Grader
from jaxjudge.grading.processes import ProcessGrader, grader_for

pytestmark = pytest.mark.slow

PROBLEM = load_problem("rematerialized-mlp-block")
REFERENCE = PROBLEM.reference_path.read_text()
WRONG = REFERENCE.replace("return jnp.mean((out - y) ** 2)",
                          "return 2.0 * jnp.mean((out - y) ** 2)")
SLOW = "import time\ntime.sleep(10**6)\n"
FAST = Limits(wall_seconds=60, cpu_seconds=30, memory_mb=1024, output_kb=64)


def _variant(k: int) -> str:
    """The reference with a different constant: a new exported program, the same numbers."""
    return REFERENCE.replace("return jnp.mean((out - y) ** 2)",
                             f"return jnp.mean((out - y) ** 2) + 0.0 * jnp.sum(y) * {k + 1}")


def _descendants(pid: int) -> set[int]:
    found, stack = set(), [pid]
    while stack:
        here = stack.pop()
        for task in Path(f"/proc/{here}/task").glob("*"):
            try:
                kids = {int(k) for k in (task / "children").read_text().split()}
            except OSError:
                continue
            stack.extend(kids - found)
            found |= kids
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture(scope="module")
def graders() -> Iterator[ProcessGrader]:
    with ProcessGrader(2, report_cache=8) as pg:
        yield pg


def test_grades_from_many_threads_on_every_worker(graders: ProcessGrader) -> None:
    sources = [_variant(k) for k in range(4)] + [WRONG]
    seen: set[int] = set()
    lock = threading.Lock()

    def one(src: str) -> Verdict:
        report = graders.grade(PROBLEM, src, "run")
        with lock:
            seen.update(p for p in graders.pids() if _alive(p))
        return report.verdict

    with ThreadPoolExecutor(4) as ex:
        verdicts = list(ex.map(one, sources))
    assert verdicts == [Verdict.ACCEPTED] * 4 + [Verdict.WRONG_ANSWER]
    assert len(seen) == 2 and os.getpid() not in seen


def test_problem_by_id_and_identical_sources_from_the_parent_cache(
        graders: ProcessGrader) -> None:
    first = graders.grade(PROBLEM.id, _variant(40), "run")
    again = graders.grade(PROBLEM.id, _variant(40), "run")
    assert first.verdict is Verdict.ACCEPTED and "cached" not in first.timings
    assert again.timings.get("cached") == 1.0 and again.verdict is Verdict.ACCEPTED


def test_a_callers_error_is_raised_in_the_caller(graders: ProcessGrader) -> None:
    with pytest.raises(ValueError, match="mode must be"):
        graders.grade(PROBLEM, REFERENCE, "bogus")  # type: ignore[arg-type]
    with pytest.raises(CustomInputError):
        graders.grade(PROBLEM, REFERENCE, "run", custom_inputs=[{"x": "not an array"}])
    assert graders.grade(PROBLEM, _variant(41), "run").verdict is Verdict.ACCEPTED


def test_a_worker_killed_mid_grade_is_internal_error_then_replaced() -> None:
    with ProcessGrader(1) as pg:
        (victim,) = pg.pids()
        below: set[int] = set()

        def kill() -> None:  # once the slow grade runs: its zygotes and their children too
            below.update(_descendants(victim))
            os.kill(victim, signal.SIGKILL)

        killer = threading.Timer(3.0, kill)
        killer.start()
        try:
            report = pg.grade(PROBLEM, SLOW, "run", limits=FAST)
        finally:
            killer.cancel()
        assert len(below) >= 3  # two zygotes' sandboxes and the slow stage
        assert report.verdict is Verdict.INTERNAL_ERROR
        assert "not your fault" in report.message and report.max_score > 0
        (fresh,) = pg.pids()
        assert fresh != victim
        assert pg.grade(PROBLEM, _variant(42), "run").verdict is Verdict.ACCEPTED
        pids = pg.pids() + sorted(below)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def test_no_workers_is_a_callers_error() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ProcessGrader(0)


def test_grader_for_several_workers_is_processes_and_for_one_this_process() -> None:
    one = grader_for(1, warm_pool=False)
    try:
        assert isinstance(one, Grader) and one.pool is None
    finally:
        one.close()
    several = grader_for(2, warm_pool=False)
    try:
        assert isinstance(several, ProcessGrader) and len(several.pids()) == 2
        assert os.getpid() not in several.pids()
    finally:
        several.close()


BROKEN = "def solve(:\n"  # compile_error: the fastest grade there is


def _in_a_thread(fn):  # type: ignore[no-untyped-def]
    """fn() in a thread that ends right after, as `jaxjudge worker`'s grade threads do."""
    box: list = []
    t = threading.Thread(target=lambda: box.append(fn()))
    t.start()
    t.join()
    return box[0]


def _wait_alive(pg: ProcessGrader, n: int, seconds: float = 120.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pids = [p for p in pg.pids() if _alive(p)]
        if len(pids) == n:
            return pids
        time.sleep(0.2)
    raise AssertionError(f"not {n} live workers: {pg.pids()}")


def test_workers_outlive_the_threads_that_started_them() -> None:
    # PR_SET_PDEATHSIG fires when the *thread* that started a worker ends: workers started by
    # a caller's short-lived thread (start() or a replacement) must not die with it.
    pg = _in_a_thread(lambda: ProcessGrader(2, warm_pool=False).start())
    try:
        time.sleep(1.0)
        first = [p for p in pg.pids() if _alive(p)]
        assert len(first) == 2
        os.kill(first[0], signal.SIGKILL)
        assert _in_a_thread(lambda: pg.grade(PROBLEM, BROKEN, "run")).verdict \
            is Verdict.INTERNAL_ERROR
        time.sleep(1.0)
        _wait_alive(pg, 2)
        time.sleep(1.0)
        assert len([p for p in pg.pids() if _alive(p)]) == 2
        verdicts = {pg.grade(PROBLEM, BROKEN, "run").verdict for _ in range(2)}
        assert verdicts == {Verdict.COMPILE_ERROR}
    finally:
        pg.close()
