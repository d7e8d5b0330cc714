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


def test_requests_and_reports_larger_than_a_pipe_buffer(graders: ProcessGrader) -> None:
    # An 8 MB source one way, a 50 MB print's report (263 KB pickled, measured) the other: the
    # parent reads while the worker writes, so neither blocks on a full 64 KB pipe.
    import pickle

    big = graders.grade(PROBLEM, REFERENCE + "\n#" + "x" * (8 << 20) + "\n", "run")
    assert big.verdict is not Verdict.INTERNAL_ERROR
    loud = graders.grade(PROBLEM, REFERENCE + "\nprint('y' * 50_000_000)\n", "run")
    assert loud.verdict is not Verdict.INTERNAL_ERROR and len(pickle.dumps(loud)) > 1 << 16
    assert graders.grade(PROBLEM, _variant(43), "run").verdict is Verdict.ACCEPTED


def test_a_worker_killed_mid_grade_is_internal_error_then_replaced() -> None:
    with ProcessGrader(1) as pg:
        (victim,) = pg.pids()
        below: set[int] = set()

        def kill() -> None:  # once the slow grade runs: its zygotes and their children too
            below.update(_descendants(victim))
            os.kill(victim, signal.SIGKILL)

        killer = threading.Timer(3.0, kill)
        started = time.monotonic()
        killer.start()
        try:
            report = pg.grade(PROBLEM, SLOW, "run", limits=FAST)
            answered = time.monotonic()
        finally:
            killer.cancel()
        assert len(below) >= 3  # two zygotes' sandboxes and the slow stage
        assert report.verdict is Verdict.INTERNAL_ERROR
        # answered at once: not after the new worker's start-up (its zygotes' `import jax`)
        assert answered - started - killer.interval < 2.0
        assert "not your fault" in report.message and report.max_score > 0
        (fresh,) = _wait_alive(pg, 1)  # started in the background, after the answer
        assert fresh != victim
        _wait_idle(pg)  # that start-up took 1.9 to 9.7 s, measured
        assert pg.grade(PROBLEM, _variant(42), "run").verdict is Verdict.ACCEPTED
        pids = pg.pids() + sorted(below)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids)


def _wait_idle(pg: ProcessGrader, seconds: float = 120.0) -> float:
    """When every worker is up and idle (the spawner has nothing left to do)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with pg._cond:
            if len(pg._idle) == pg.workers:
                return time.monotonic()
        time.sleep(0.05)
    raise AssertionError("workers not idle")


def test_no_workers_is_a_callers_error() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        ProcessGrader(0)


def test_grading_before_start_is_a_callers_error_not_a_hang() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        ProcessGrader(1, warm_pool=False).grade("rematerialized-mlp-block", BROKEN)


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


def test_workers_run_the_installed_package_not_one_in_the_callers_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`grade-set` run from a folder that holds a `jaxjudge/` (a checkout of another version,
    or a hostile folder of submissions): `python -m` would put that folder first on the
    workers' sys.path and run its code as the trusted grader, under another grader version
    (seen on the 13-core host: the workers' reference figures were kept under another key)."""
    decoy = tmp_path / "jaxjudge"
    decoy.mkdir()
    marker = tmp_path / "decoy-ran"
    (decoy / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.chdir(tmp_path)
    pg = ProcessGrader(1, warm_pool=False).start()
    try:
        report = pg.grade(load_problem("rematerialized-mlp-block"), BROKEN.encode(),
                          mode="submit")
    finally:
        pg.close()
    assert report.verdict == Verdict.COMPILE_ERROR, report.message
    assert not marker.exists()


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
        _in_a_thread(lambda: pg.grade(PROBLEM, BROKEN, "run"))  # finds it dead: replaced
        time.sleep(1.0)
        _wait_alive(pg, 2)
        time.sleep(1.0)
        assert len([p for p in pg.pids() if _alive(p)]) == 2
        verdicts = {pg.grade(PROBLEM, BROKEN, "run").verdict for _ in range(2)}
        assert verdicts == {Verdict.COMPILE_ERROR}
    finally:
        pg.close()


SHORT = Limits(wall_seconds=8, cpu_seconds=8, memory_mb=1024, output_kb=64)


def _new_live_children(before: set[int], seconds: float = 15.0) -> set[int]:
    """Our descendants not in `before` still alive after up to `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        left = {p for p in _descendants(os.getpid()) - before if _alive(p)}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def test_close_wakes_callers_waiting_for_a_worker() -> None:
    # More callers than workers: one grades, one waits for the worker. close() lets the grade
    # in progress finish, then the waiting caller gets RuntimeError (it used to wait forever).
    pg = ProcessGrader(1, warm_pool=False).start()
    outcome: dict[str, object] = {}

    def call(name: str, src: str) -> None:
        try:
            outcome[name] = pg.grade(PROBLEM, src, "run", limits=SHORT).verdict
        except RuntimeError as exc:
            outcome[name] = exc

    grading = threading.Thread(target=call, args=("grading", SLOW), daemon=True)
    grading.start()
    time.sleep(1.0)
    waiting = threading.Thread(target=call, args=("waiting", BROKEN), daemon=True)
    waiting.start()
    time.sleep(1.0)
    pg.close()
    grading.join(60)
    waiting.join(60)
    assert not waiting.is_alive() and "closed" in str(outcome["waiting"])
    assert isinstance(outcome["grading"], Verdict)
    with pytest.raises(RuntimeError, match="closed"):
        pg.grade(PROBLEM, BROKEN, "run")


class _Interrupted(Exception):
    pass


def test_a_caller_interrupted_mid_grade_never_gets_another_grades_report() -> None:
    # A signal handler's exception (Ctrl-C in a script) leaves the interrupted grade's reply in
    # the worker's pipe: the next grade on that worker used to read it as its own report.
    def interrupt(*_: object) -> None:
        raise _Interrupted

    old = signal.signal(signal.SIGALRM, interrupt)
    try:
        with ProcessGrader(1, warm_pool=False) as pg:
            signal.setitimer(signal.ITIMER_REAL, 1.5)
            with pytest.raises(_Interrupted):
                pg.grade(PROBLEM, SLOW, "run", limits=SHORT)
            assert pg.grade(PROBLEM, BROKEN, "run").verdict is Verdict.COMPILE_ERROR
            assert pg.grade(PROBLEM, BROKEN, "run").verdict is Verdict.COMPILE_ERROR
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def test_a_replacement_that_cannot_start_is_internal_error_quickly_then_retried(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = _descendants(os.getpid())
    with ProcessGrader(1, warm_pool=False) as pg:
        (victim,) = pg.pids()
        os.kill(victim, signal.SIGKILL)
        monkeypatch.setenv("PYTHONMALLOC", "bogus")  # a new interpreter cannot start
        for _ in range(3):  # never a hang, never an exception: internal_error at once
            t0 = time.monotonic()
            assert pg.grade(PROBLEM, BROKEN, "run").verdict is Verdict.INTERNAL_ERROR
            assert time.monotonic() - t0 < 5.0
            time.sleep(0.5)
        monkeypatch.delenv("PYTHONMALLOC")
        deadline = time.monotonic() + 90
        verdict = Verdict.INTERNAL_ERROR
        while verdict is Verdict.INTERNAL_ERROR and time.monotonic() < deadline:
            verdict = pg.grade(PROBLEM, BROKEN, "run").verdict
            time.sleep(0.5)
        assert verdict is Verdict.COMPILE_ERROR  # retried, and grading again
    assert not _new_live_children(before)


def test_a_worker_that_died_while_idle_costs_no_submission_an_internal_error() -> None:
    with ProcessGrader(1, warm_pool=False) as pg:
        (victim,) = pg.pids()
        os.kill(victim, signal.SIGKILL)  # as the OOM killer would, between two grades
        _gone({victim})
        _threads_gone(victim)  # a dead leader is reapable only once its threads have exited
        assert pg.grade(PROBLEM, BROKEN, "run").verdict is Verdict.COMPILE_ERROR
        assert victim not in pg.pids()


def test_close_during_a_replacement_leaves_no_worker() -> None:
    before = _descendants(os.getpid())
    pg = ProcessGrader(1, warm_pool=False).start()
    (victim,) = pg.pids()
    os.kill(victim, signal.SIGKILL)
    caller = threading.Thread(target=lambda: pg.grade(PROBLEM, BROKEN, "run"), daemon=True)
    caller.start()
    time.sleep(0.3)  # the broken grade is answered; its replacement is starting
    pg.close()
    caller.join(60)
    assert not _new_live_children(before)


def test_a_worker_that_cannot_start_fails_start_clearly_and_leaves_nothing() -> None:
    before = _descendants(os.getpid())
    pg = ProcessGrader(2, warm_pool=False, engine="bogus")
    with pytest.raises(RuntimeError, match=r"could not start.*engine must be"):
        pg.start()
    assert not _new_live_children(before, seconds=2.0)
    closing = threading.Thread(target=pg.close, daemon=True)  # used to wait forever
    closing.start()
    closing.join(10)
    assert not closing.is_alive()
    with pytest.raises(RuntimeError, match="closed"):
        pg.grade(PROBLEM, BROKEN, "run")


# -- the service end to end: a real server (tests/api_fixtures.py) grading in 2 workers ----------


def _grading_workers(root: int) -> list[int]:
    found = []
    for pid in _descendants(root):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"jaxjudge.grading.processes" in cmd and _alive(pid):
            found.append(pid)
    return sorted(found)


def _running(client, sub_id: str, seconds: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while client.get(f"/v1/submissions/{sub_id}").json()["status"] != "running":
        assert time.monotonic() < deadline, "never running"
        time.sleep(0.1)


def _threads_gone(pid: int, seconds: float = 15.0) -> None:
    """Wait until a killed process's other threads have exited too: its leader shows as a
    zombie at once, but waitpid (Popen.poll) sees the death only after the whole group."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if len(os.listdir(f"/proc/{pid}/task")) <= 1:
                return
        except OSError:
            return
        time.sleep(0.05)


def _gone(pids: set[int], seconds: float = 15.0) -> set[int]:
    deadline = time.monotonic() + seconds
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return {p for p in pids if _alive(p)}


def test_service_a_grading_worker_killed_mid_grade_then_shutdown_leaves_nothing(
        tmp_path: Path) -> None:
    from api_fixtures import Server, submit, wait_done

    srv = Server(tmp_path, database_url=f"sqlite:///{tmp_path}/judge.db", workers=2)
    try:
        workers = _grading_workers(srv.proc.pid)
        assert len(workers) == 2
        with srv.client() as client:
            slow = submit(client, SLOW).json()["id"]
            _running(client, slow)
            time.sleep(3.0)  # its stages run in one of the workers' sandboxes
            for pid in workers:  # whichever grades it
                os.kill(pid, signal.SIGKILL)
            done = wait_done(client, slow)
            assert done["verdict"] == "internal_error", done
            later = wait_done(client, submit(client, BROKEN).json()["id"])
            assert later["verdict"] == "compile_error", later
            fresh = _grading_workers(srv.proc.pid)
            assert len(fresh) == 2 and not set(fresh) & set(workers)
        tree = _descendants(srv.proc.pid)
        srv.proc.send_signal(signal.SIGTERM)  # a graceful stop, only the server's own pid
        srv.proc.wait(60)
        assert not _gone(tree), "processes left after the server's shutdown"
    finally:
        srv.kill()


def test_service_killed_by_sigkill_mid_grade_leaves_no_process(tmp_path: Path) -> None:
    from api_fixtures import Server, submit

    srv = Server(tmp_path, database_url=f"sqlite:///{tmp_path}/judge.db", workers=2)
    try:
        with srv.client() as client:
            ids = [submit(client, SLOW).json()["id"] for _ in range(2)]
            for sub_id in ids:
                _running(client, sub_id)
        time.sleep(3.0)
        tree = _descendants(srv.proc.pid)
        assert len(_grading_workers(srv.proc.pid)) == 2 and len(tree) >= 8
        os.kill(srv.proc.pid, signal.SIGKILL)  # the server alone: what it started must follow
        srv.proc.wait(60)
        assert not _gone(tree), "processes outlived a SIGKILLed server"
    finally:
        srv.kill()


class _TwoArgs(Exception):
    def __init__(self, what: str, why: str) -> None:
        super().__init__(f"{what}: {why}")


def test_an_exception_that_does_not_unpickle_reaches_the_caller_as_its_text() -> None:
    import pickle

    from jaxjudge.grading.processes import _portable

    exc = _TwoArgs("problem", "malformed")
    with pytest.raises(TypeError):  # what the parent's recv() raised instead of the error
        pickle.loads(pickle.dumps(exc))
    sent = pickle.loads(pickle.dumps(_portable(exc)))
    assert isinstance(sent, RuntimeError) and str(sent) == "_TwoArgs: problem: malformed"
    plain = ValueError("mode must be 'run' or 'submit'")
    assert _portable(plain) is plain


@pytest.mark.postgres
def test_jaxjudge_worker_grades_on_after_its_grading_workers_are_killed(tmp_path: Path) -> None:
    # `jaxjudge worker` grades each job in a thread of its own that ends with the grade: its
    # grading workers' replacements must not die with those threads (PR_SET_PDEATHSIG).
    from api_fixtures import FAST, Server, Worker, postgres_server, submit, wait_done

    try:
        cluster = postgres_server()
        db = cluster.__enter__()
    except LookupError as exc:
        pytest.skip(str(exc))
    node = worker = None
    try:
        node = Server(tmp_path / "node", queue="postgres", database_url=db, **FAST)
        worker = Worker(tmp_path, db, "w", workers=2)
        worker.wait_ready()
        victims = _grading_workers(worker.proc.pid)
        assert len(victims) == 2
        with node.client() as client:
            slow = submit(client, SLOW).json()["id"]
            _running(client, slow)
            time.sleep(3.0)
            for pid in victims:
                os.kill(pid, signal.SIGKILL)
            assert wait_done(client, slow)["status"] == "done"
            time.sleep(2.0)  # the threads that graded (and found the workers dead) are gone
            for _ in range(3):
                done = wait_done(client, submit(client, BROKEN).json()["id"])
                assert done["verdict"] == "compile_error", done
        fresh = _grading_workers(worker.proc.pid)
        assert len(fresh) == 2 and not set(fresh) & set(victims)
    finally:
        for proc in (worker, node):
            if proc is not None:
                proc.stop()
        cluster.__exit__(None, None, None)
