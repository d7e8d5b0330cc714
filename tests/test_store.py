"""The submission store on a real SQLite file and on a real PostgreSQL server, plus the queue's
bookkeeping (reservations, bounds, recovery) which needs no grading at all."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC

import pytest
from conftest import empty_postgres

from jaxjudge.grading import report as gr
from jaxjudge.service.queue import GradingQueue, QueueFull, public_report
from jaxjudge.service.store import InvalidCursor, Store, decode_cursor, encode_cursor


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('db')}/sub/dir/judge.db"
    else:
        url = request.getfixturevalue("postgres_url")
        empty_postgres(url)  # every test starts from an empty database
    s = Store(url)
    yield s
    s.close()


SOURCE = "def solve(params, x, y):\n    return 'ünïcode'\n".encode() + b"\x00tail"


def test_create_and_get_round_trip(store: Store) -> None:
    created = store.create("p1", "run", SOURCE)
    got = store.get(created.id)
    assert got is not None
    assert got == created
    assert got.status == "queued" and got.verdict is None and got.attempts == 0
    assert got.source_bytes == len(SOURCE)
    assert got.created_at.tzinfo is not None and got.created_at.utcoffset() == UTC.utcoffset(None)
    assert store.get("no-such-id") is None


def test_claim_is_exclusive_and_returns_exact_bytes(store: Store) -> None:
    sid = store.create("p1", "submit", SOURCE).id
    claimed = store.claim(sid)
    assert claimed is not None
    assert claimed.source == SOURCE and claimed.mode == "submit" and claimed.attempts == 1
    assert store.claim(sid) is None  # a second worker gets nothing
    record = store.get(sid)
    assert record is not None and record.status == "running" and record.started_at is not None


def test_finish_only_from_running(store: Store) -> None:
    sid = store.create("p1", "run", b"x").id
    assert not store.finish(sid, verdict="accepted", score=1, max_score=1, report_json="{}")
    store.claim(sid)
    assert store.finish(sid, verdict="wrong_answer", score=2.5, max_score=10, report_json='{"a":1}')
    assert not store.finish(sid, verdict="accepted", score=1, max_score=1, report_json="{}")
    record = store.get(sid)
    assert record is not None
    assert (record.status, record.verdict, record.score, record.max_score) == (
        "done", "wrong_answer", 2.5, 10
    )
    assert record.report_json == '{"a":1}' and record.finished_at is not None


def test_recover_requeues_running_in_submission_order(store: Store) -> None:
    a, b, c, d = (store.create("p1", "run", bytes([i])).id for i in range(4))
    store.claim(a)
    store.claim(c)
    store.finish(c, verdict="accepted", score=1, max_score=1, report_json="{}")
    assert store.recover() == [a, b, d]
    record = store.get(a)
    assert record is not None and record.status == "queued" and record.started_at is None
    claimed = store.claim(a)
    assert claimed is not None and claimed.attempts == 2  # the interrupted try counts
    assert store.count_by_status() == {"queued": 2, "running": 1, "done": 1}


def test_rows_survive_a_new_store_on_the_same_database(store: Store) -> None:
    sid = store.create("p1", "run", SOURCE).id
    other = Store(str(store.engine.url.render_as_string(hide_password=False)))
    try:
        got = other.get(sid)
        assert got is not None and got.source_sha256 == store.get(sid).source_sha256  # type: ignore[union-attr]
    finally:
        other.close()


def test_pages_newest_first_with_filters_and_cursor(store: Store) -> None:
    ids = []
    for i in range(7):
        sid = store.create("p1" if i % 2 == 0 else "p2", "run", bytes([i])).id
        ids.append(sid)
        if i in (1, 4):
            store.claim(sid)
            store.finish(sid, verdict="compile_error", score=0, max_score=1, report_json="{}")
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        items, cursor = store.list_page(limit=3, cursor=cursor)
        seen += [r.id for r in items]
        pages += 1
        if cursor is None:
            break
    assert seen == ids[::-1] and pages == 3
    p1, _ = store.list_page(problem_id="p1", limit=50)
    assert [r.id for r in p1] == [ids[6], ids[4], ids[2], ids[0]]
    ce, _ = store.list_page(verdict="compile_error", limit=50)
    assert [r.id for r in ce] == [ids[4], ids[1]]
    both, nxt = store.list_page(problem_id="p2", verdict="compile_error", limit=1)
    assert [r.id for r in both] == [ids[1]] and nxt is None
    queued, _ = store.list_page(status="queued", limit=50)
    assert len(queued) == 5
    with pytest.raises(InvalidCursor):
        store.list_page(cursor="not-a-cursor")


def test_cursor_round_trip_and_rejection() -> None:
    assert decode_cursor(encode_cursor(12345)) == 12345
    for bad in ("", "!!!", encode_cursor(1)[:-2] + "zz", "czE6LTE"):  # last: "s1:-1"
        with pytest.raises(InvalidCursor):
            decode_cursor(bad)


def test_concurrent_writers_lose_nothing(store: Store) -> None:
    created: list[str] = []
    lock = threading.Lock()

    def writer(n: int) -> None:
        for i in range(10):
            sid = store.create("p1", "run", f"{n}-{i}".encode()).id
            with lock:
                created.append(sid)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    items, _ = store.list_page(limit=100)
    assert sorted(r.id for r in items) == sorted(created) and len(created) == 50
    assert len({r.seq for r in items}) == 50


# -- the queue's bookkeeping (workers never started: nothing is graded) -------------------------
def test_queue_bound_and_reservations(store: Store) -> None:
    q = GradingQueue(store, workers=1, queue_size=2)
    for _ in range(2):
        with q.reserve() as slot:
            slot.push(store.create("p1", "run", b"x").id)
    assert q.depth == 2
    with pytest.raises(QueueFull) as info:
        q.reserve()
    assert info.value.retry_after >= 1
    q2 = GradingQueue(store, workers=1, queue_size=1)
    with pytest.raises(RuntimeError), q2.reserve():
        raise RuntimeError("the insert failed")
    with q2.reserve() as slot:  # the failed reservation gave its slot back
        slot.push("some-id")
    assert q2.depth == 1


def test_queue_recovery_ignores_the_bound(store: Store) -> None:
    ids = [store.create("p1", "run", b"x").id for _ in range(3)]
    store.claim(ids[0])
    q = GradingQueue(store, workers=1, queue_size=1)
    assert q.recover() == 3 and q.depth == 3


def test_public_report_strips_hidden_details() -> None:
    details = gr.TestDetails(inputs={"x": [1.0]}, expected=[2.0], got=[2.0])
    report = gr.Report(
        verdict=gr.Verdict.WRONG_ANSWER,
        problem="p",
        mode="submit",
        message="m",
        tests=[
            gr.TestResult(
                name="visible", visible=True, verdict=gr.Verdict.ACCEPTED, details=details
            ),
            gr.TestResult(
                name="hidden", visible=False, verdict=gr.Verdict.WRONG_ANSWER, details=details
            ),
        ],
    )
    public = public_report(report)
    assert public.tests[0].details == details
    assert public.tests[1].details is None
    assert report.tests[1].details is not None  # the original is not modified
