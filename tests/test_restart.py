"""Kill -9 the server mid-queue, start it again on the same database: nothing is lost."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from api_fixtures import BROKEN, GRADE_SECONDS, Server, submit, wait_done

pytestmark = pytest.mark.slow

# Slow enough to be caught mid-grade, then ends the grading process: a runtime_error.
SLOW = "import time\ntime.sleep(3)\nraise SystemExit(0)\n"


def test_sigkill_mid_queue_loses_nothing(tmp_path: Path) -> None:
    # `jaxjudge serve` with the default database URL: sqlite:///var/jaxjudge.db under the cwd.
    first = Server(tmp_path, via_cli=True, workers=1)
    try:
        with first.client() as c:
            ids = [submit(c, SLOW).json()["id"]]
            ids += [submit(c, BROKEN).json()["id"] for _ in range(3)]
            deadline = time.monotonic() + GRADE_SECONDS
            while c.get(f"/v1/submissions/{ids[0]}").json()["status"] != "running":
                assert time.monotonic() < deadline, "the first submission never started"
                time.sleep(0.05)
            statuses = [c.get(f"/v1/submissions/{i}").json()["status"] for i in ids]
    finally:
        first.kill()
    assert statuses[0] == "running" and statuses[1:] == ["queued"] * 3
    assert (tmp_path / "var" / "jaxjudge.db").is_file()

    second = Server(tmp_path, via_cli=True, workers=1)
    try:
        with second.client() as c:
            done = [wait_done(c, i) for i in ids]
            listed = c.get("/v1/submissions", params={"limit": 100}).json()["items"]
    finally:
        second.stop()
    assert [d["verdict"] for d in done[1:]] == ["compile_error"] * 3
    assert done[0]["verdict"] == "runtime_error", done[0]["report"]["message"]
    assert done[0]["attempts"] == 2  # interrupted once, graded on the restart
    assert [d["attempts"] for d in done[1:]] == [1, 1, 1]
    assert sorted(i["id"] for i in listed) == sorted(ids)
