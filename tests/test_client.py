"""`jaxjudge submit`, `problems --server` and `show --server` against real `jaxjudge serve`
processes: the CLI runs as a subprocess from this worktree, `JudgeClient` in-process with a real
httpx transport. Two servers (one open, one with tokens) start side by side to keep this short.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import os
import pty
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from api_fixtures import BROKEN, PROBLEM, REPO, Server, free_port, service_env, wait_done

from jaxjudge import list_problems, load_problem
from jaxjudge.client.remote import (
    ClientConfig,
    ClientError,
    JudgeClient,
    clean_text,
    open_http,
    resolve_config,
    retry_after,
)
from jaxjudge.grading.report import Report

pytestmark = pytest.mark.slow

SUBMISSIONS = REPO / "problems" / PROBLEM / "submissions"
REFERENCE_FILE = REPO / "problems" / PROBLEM / "reference.py"
WRONG_FILE = SUBMISSIONS / "wrong_forgets_b2.py"
SLEEPER_FILE = SUBMISSIONS / "tle_sleep_at_import.py"
TOKENS = ("t-env", "t-file", "t-rate")
RATE_PER_MINUTE = 30  # an empty bucket refills one request in 2 s


@dataclass
class Servers:
    open: Server  # no auth, one worker, a queue of one: easy to make busy
    auth: Server  # bearer tokens and a rate limit
    local_grade: subprocess.CompletedProcess[str]  # `jaxjudge grade` of the reference, run mode


def cli_env(config_home: Path, **extra: str) -> dict[str, str]:
    """No JAXJUDGE_* from the outside, this worktree importable, an isolated config dir."""
    env = service_env()
    env["XDG_CONFIG_HOME"] = str(config_home)
    env.update(extra)
    return env


def cli_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "jaxjudge.cli.service", *args]


def jaxjudge(config_home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli_cmd(*args), cwd=REPO, env=cli_env(config_home, **env), capture_output=True,
        text=True, timeout=120, check=False,
    )


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    root = tmp_path_factory.mktemp("client")
    (root / "config").mkdir()
    local = subprocess.Popen(
        cli_cmd("grade", "--problem", PROBLEM, str(REFERENCE_FILE), "--mode", "run"),
        cwd=REPO, env=cli_env(root / "config"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    with ThreadPoolExecutor(2) as pool:
        open_ = pool.submit(
            Server, root / "open", database_url=f"sqlite:///{root}/open.db", workers=1,
            queue_size=1,
        )
        auth = pool.submit(
            Server, root / "auth", database_url=f"sqlite:///{root}/auth.db", workers=1,
            auth_tokens=",".join(TOKENS), rate_limit_per_minute=RATE_PER_MINUTE,
        )
        started = [open_.result(), auth.result()]
    out, err = local.communicate(timeout=300)
    try:
        yield Servers(started[0], started[1],
                      subprocess.CompletedProcess(local.args, local.returncode, out, err))
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty config dir ($XDG_CONFIG_HOME) so the user's real config is never read."""
    path = tmp_path / "config"
    path.mkdir()
    return path


# A source line names the file: the local grade's own name, "submission.py" on a server (the
# HTTP API takes source, not a file name).
_SOURCE_AT = re.compile(r"[\w.-]+\.py:(\d+)\)\s*")


def without_timing(text: str) -> str:
    lines = (line for line in text.splitlines() if not line.startswith("graded in"))
    return "\n".join(_SOURCE_AT.sub(r"FILE:\1) ", line) for line in lines)


def assert_clean_failure(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    """Exit 2, nothing on stdout, one `error:` line naming every needle, no traceback."""
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert proc.stderr.startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


# -- grading through the server -----------------------------------------------------------------
def test_accepted_reference_prints_what_grade_prints(servers: Servers, home: Path) -> None:
    local = servers.local_grade
    assert local.returncode == 0, local.stderr
    proc = jaxjudge(home, "submit", "--server", servers.open.base_url, "--problem", PROBLEM,
                    str(REFERENCE_FILE), "--mode", "run")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("accepted  rematerialized-mlp-block (run)")
    assert without_timing(proc.stdout) == without_timing(local.stdout)
    assert "graded in" in proc.stdout  # the server's timing is shown, as grade shows its own
    assert proc.stderr == ""  # no spinner and no notices when stderr is not a terminal


def test_json_output_is_the_report(servers: Servers, home: Path) -> None:
    proc = jaxjudge(home, "submit", "--server", servers.open.base_url, "-p", PROBLEM,
                    str(REFERENCE_FILE), "--mode", "run", "--json")
    assert proc.returncode == 0, proc.stderr
    report = Report.model_validate(json.loads(proc.stdout))  # exactly one JSON object
    assert report.verdict == "accepted" and report.problem == PROBLEM and report.mode == "run"
    assert [t.name for t in report.tests] == [c.name for c in load_problem(PROBLEM).examples()]
    assert report.requirements and all(r.passed for r in report.requirements)


def read_pty(fd: int, sink: bytearray) -> None:
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO once the last writer closed
            return
        if not chunk:
            return
        sink.extend(chunk)


def test_wrong_answer_exit_1_with_a_spinner_on_a_terminal(servers: Servers, home: Path) -> None:
    primary, secondary = pty.openpty()
    seen = bytearray()
    reader = threading.Thread(target=read_pty, args=(primary, seen), daemon=True)
    reader.start()
    try:
        proc = subprocess.run(
            cli_cmd("submit", "--server", servers.open.base_url, "-p", PROBLEM, str(WRONG_FILE),
                    "--mode", "run"),
            cwd=REPO, env=cli_env(home, TERM="xterm"), stdout=subprocess.PIPE,
            stderr=secondary, text=True, timeout=120, check=False,
        )
    finally:
        os.close(secondary)
    reader.join(10)
    os.close(primary)
    assert proc.returncode == 1
    assert proc.stdout.startswith("wrong_answer  rematerialized-mlp-block (run)")
    assert "\x1b" not in proc.stdout  # stdout is a pipe: plain text
    spinner = seen.decode(errors="replace")
    assert f"queued on {servers.open.base_url} (" in spinner, spinner


def test_unknown_problem_exit_2(servers: Servers, home: Path) -> None:
    proc = jaxjudge(home, "submit", "--server", servers.open.base_url, "-p", "no-such-problem",
                    str(REFERENCE_FILE))
    assert_clean_failure(proc, "unknown problem 'no-such-problem'",
                         f"jaxjudge problems --server {servers.open.base_url}")


def test_source_that_is_not_utf8_is_refused_with_the_servers_reason(
    servers: Servers, home: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "latin1.py"
    bad.write_bytes(b"# caf\xe9\ndef solve(params, x, y):\n    return 0\n")
    proc = jaxjudge(home, "submit", "--server", servers.open.base_url, "-p", PROBLEM, str(bad))
    assert_clean_failure(proc, "not UTF-8", "offset 5")


def test_honest_bytes_survive_the_trip(servers: Servers) -> None:
    """CRLF line ends, a BOM-less non-ASCII comment and no final newline arrive as written
    (source_b64): the server's sha256 is the file's."""
    import hashlib

    source = REFERENCE_FILE.read_bytes().replace(b"\n", b"\r\n") + b"# \xc3\xa9t\xc3\xa9"
    with httpx.Client(base_url=servers.open.base_url + "/") as http:
        client = JudgeClient(http)
        sub = client.submit(PROBLEM, source, "run", time.monotonic() + 60)
        done = client.wait(sub, time.monotonic() + 120)
        body = http.get(f"v1/submissions/{sub.id}").json()
    assert body["source_sha256"] == hashlib.sha256(source).hexdigest()
    assert done.report is not None and done.report.verdict == "accepted"


class LoseFirstPostAnswer(httpx.HTTPTransport):
    """A real transport that delivers the first POST to the server and then loses its answer
    (as a node restarting or a dropped connection would), recording every POST's key."""

    def __init__(self) -> None:
        super().__init__()
        self.keys: list[str | None] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if request.method == "POST":
            self.keys.append(request.headers.get("idempotency-key"))
            if len(self.keys) == 1:
                response.read()
                response.close()
                raise httpx.ReadError("connection reset after the request", request=request)
        return response


def test_a_post_whose_answer_was_lost_is_retried_as_the_same_submission(
    servers: Servers,
) -> None:
    before = httpx.get(f"{servers.open.base_url}/v1/system").json()["submissions"]
    transport = LoseFirstPostAnswer()
    submitted: list[str] = []
    with httpx.Client(base_url=servers.open.base_url + "/", transport=transport) as http:
        report = JudgeClient(http).grade(
            PROBLEM, BROKEN.encode(), "run", timeout=120,
            on_submitted=lambda sub: submitted.append(sub.id),
        )
    assert report.verdict.value == "compile_error"
    assert len(transport.keys) == 2 and transport.keys[0] == transport.keys[1] is not None
    after = httpx.get(f"{servers.open.base_url}/v1/system").json()["submissions"]
    assert sum(after.values()) == sum(before.values()) + 1  # one submission, not two


def test_too_large_is_refused_with_the_servers_limit(servers: Servers) -> None:
    source = b"# " + b"x" * 70_000 + b"\n"
    with (
        httpx.Client(base_url=servers.open.base_url + "/") as http,
        pytest.raises(ClientError, match=r"too large.*65536 bytes"),
    ):
        JudgeClient(http).grade(PROBLEM, source, "run", timeout=30)


# -- problems and show --------------------------------------------------------------------------
def test_problems_and_show_from_the_server(servers: Servers, home: Path) -> None:
    url = servers.open.base_url
    listed = jaxjudge(home, "problems", "--server", url, "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert [r["id"] for r in rows] == [p.id for p in list_problems()]
    assert set(rows[0]) == {"id", "title", "difficulty", "tags"}  # as `problems --json`
    shown = jaxjudge(home, "show", PROBLEM, "--server", url)
    assert shown.returncode == 0 and "checkpoint" in shown.stdout
    starter = jaxjudge(home, "show", PROBLEM, "--server", url, "--starter")
    assert starter.returncode == 0 and starter.stdout == load_problem(PROBLEM).starter
    missing = jaxjudge(home, "show", "no-such-problem", "--server", url)
    assert_clean_failure(missing, "unknown problem 'no-such-problem'")


# -- tokens and settings ------------------------------------------------------------------------
def test_auth_without_token_says_how_to_set_it(servers: Servers, home: Path) -> None:
    proc = jaxjudge(home, "submit", "--server", servers.auth.base_url, "-p", PROBLEM,
                    str(REFERENCE_FILE))
    assert_clean_failure(proc, "needs a token", "JAXJUDGE_TOKEN=",
                         str(home / "jaxjudge" / "client.toml"))
    wrong = jaxjudge(home, "problems", "--server", servers.auth.base_url,
                     JAXJUDGE_TOKEN="not-a-token")
    assert_clean_failure(wrong, "rejected the token from JAXJUDGE_TOKEN")


def test_token_and_server_from_the_environment(
    servers: Servers, home: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN)
    proc = jaxjudge(home, "submit", "-p", PROBLEM, str(broken), "--mode", "run",
                    JAXJUDGE_SERVER=servers.auth.base_url, JAXJUDGE_TOKEN="t-env")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("compile_error")


def test_token_and_server_from_the_config_file(
    servers: Servers, home: Path, tmp_path: Path
) -> None:
    config = home / "jaxjudge" / "client.toml"
    config.parent.mkdir()
    config.write_text(f'server = "{servers.auth.base_url}/"\ntoken = "t-file"\n')
    config.chmod(0o600)
    broken = tmp_path / "broken.py"
    broken.write_text(BROKEN + "# config\n")
    proc = jaxjudge(home, "submit", "-p", PROBLEM, str(broken), "--mode", "run", "--json")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["verdict"] == "compile_error"
    assert proc.stderr == ""  # a private config file earns no warning
    config.write_text("server = 'http://x'\ntokne = 't'\n")  # a typo is an error, not ignored
    typo = jaxjudge(home, "problems", "--server", servers.auth.base_url)
    assert_clean_failure(typo, "unknown keys ['tokne']")


def test_config_token_goes_only_to_its_own_server(servers: Servers, home: Path) -> None:
    """A `--server` pasted from elsewhere must not receive the token meant for the configured
    server; the same file without a `server` line lends its token to any server."""
    config = home / "jaxjudge" / "client.toml"
    config.parent.mkdir()
    config.write_text('server = "https://judge.example.org"\ntoken = "t-file"\n')
    config.chmod(0o644)
    warnings: list[str] = []
    cfg = resolve_config(servers.auth.base_url, {"XDG_CONFIG_HOME": str(home)}, warnings.append)
    assert cfg.token is None
    assert any("not sending the token" in w for w in warnings)
    with open_http(cfg) as http, pytest.raises(ClientError, match="needs a token"):
        JudgeClient(http, config_file=cfg.config_path).problems()
    config.write_text('token = "t-file"\n')
    warnings.clear()
    cfg = resolve_config(servers.auth.base_url, {"XDG_CONFIG_HOME": str(home)}, warnings.append)
    assert (cfg.token, cfg.token_source) == ("t-file", str(config))
    assert any("chmod 600" in w for w in warnings)  # group/world-readable token file
    with open_http(cfg) as http:
        assert JudgeClient(http).problems()


def test_settings_precedence_and_bad_values(home: Path) -> None:
    config = home / "jaxjudge" / "client.toml"
    config.parent.mkdir()
    config.write_text('server = "http://from-file:1"\ntoken = "from-file"\n')
    env = {"XDG_CONFIG_HOME": str(home)}
    assert resolve_config(None, env).server == "http://from-file:1"
    env["JAXJUDGE_SERVER"] = "http://from-env:2/"
    assert resolve_config(None, env).server == "http://from-env:2"
    flag = resolve_config("https://from-flag/judge/", env | {"JAXJUDGE_TOKEN": "from-env"})
    assert (flag.server, flag.token) == ("https://from-flag/judge", "from-env")
    for bad in ("127.0.0.1:8000", "ftp://host", "http://user:pw@host", "http://h/?q=1"):
        with pytest.raises(ClientError, match="--server"):
            resolve_config(bad, env)
    with pytest.raises(ClientError, match="HTTP header"):
        resolve_config(None, env | {"JAXJUDGE_TOKEN": "a\nX-Injected: 1"})


# -- servers that are down, wrong, slow or busy ---------------------------------------------------
def test_server_down_exit_2(home: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    proc = jaxjudge(home, "submit", "--server", url, "-p", PROBLEM, str(REFERENCE_FILE))
    assert_clean_failure(proc, f"cannot reach the jaxjudge server at {url}", "refused")
    listed = jaxjudge(home, "problems", "--server", url)
    assert_clean_failure(listed, "cannot reach")


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def static_site(root: Path) -> Iterator[str]:
    """A real HTTP server that serves the files under `root` (and 501 to POST)."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def not_a_judge(tmp_path: Path) -> Iterator[str]:
    """Some other web server: it answers HTML."""
    (tmp_path / "index.html").write_text("<html>hello</html>")
    with static_site(tmp_path) as url:
        yield url


def test_an_answer_that_is_not_json_exit_2(not_a_judge: str, home: Path) -> None:
    proc = jaxjudge(home, "submit", "--server", not_a_judge, "-p", PROBLEM, str(REFERENCE_FILE))
    assert_clean_failure(proc, "not JSON", "is it a jaxjudge server")
    with (
        httpx.Client(base_url=not_a_judge + "/") as http,
        pytest.raises(ClientError, match="not JSON"),
    ):
        JudgeClient(http).problems()


def test_a_hostile_server_cannot_drive_the_terminal_or_crash_the_client(
    tmp_path: Path, home: Path
) -> None:
    """Escape sequences in what a server sends are stripped before they reach a terminal, and
    an answer nested deep enough to break a recursive decoder is a clear error."""
    problems = tmp_path / "v1" / "problems"
    problems.mkdir(parents=True)
    (problems / "evil").write_text(json.dumps({
        "id": "evil", "title": "t", "difficulty": "easy", "tags": [],
        "statement": "# Evil\n\x1b]0;title\x07\x1b[2Jcleared \u202egnp.exe",
        "starter": "def solve(params, x, y):\x1b[1A\n    return 0\n",
    }))
    (problems / "deep").write_text("[" * 5000 + "]" * 5000)
    with static_site(tmp_path) as url:
        shown = jaxjudge(home, "show", "evil", "--server", url)
        starter = jaxjudge(home, "show", "evil", "--server", url, "--starter")
        deep = jaxjudge(home, "show", "deep", "--server", url)
    assert shown.returncode == 0, shown.stderr
    assert "cleared gnp.exe" in shown.stdout and "\x1b" not in shown.stdout
    assert "\u202e" not in shown.stdout and "\x07" not in shown.stdout
    assert starter.returncode == 0 and starter.stdout.startswith("def solve(params, x, y):")
    assert "\x1b" not in starter.stdout
    assert_clean_failure(deep, "nested too deeply")


def test_rate_limit_retry_after_is_honoured_once(servers: Servers) -> None:
    cfg = ClientConfig(servers.auth.base_url, "t-rate", "JAXJUDGE_TOKEN", Path("/nonexistent"))
    notices: list[str] = []
    with open_http(cfg) as http:

        def burn() -> None:
            while http.get("v1/submissions/0").status_code != 429:
                pass

        client = JudgeClient(http, token_source="JAXJUDGE_TOKEN", notify=notices.append)
        burn()
        start = time.monotonic()
        assert [p.id for p in client.problems()] == [p.id for p in list_problems()]
        assert time.monotonic() - start >= 1.0  # waited for the bucket, then succeeded
        assert notices and "rate limited" in notices[0]
        burn()
        with pytest.raises(ClientError, match=r"rate limited .* retry in [12] s"):
            client.grade(PROBLEM, BROKEN.encode(), "run", timeout=1.5)  # no time to wait


def test_busy_server_timeout_then_queue_full(servers: Servers, home: Path) -> None:
    """One worker held by a submission that sleeps until its wall limit: the CLI's submission
    queues behind it and times out (with its id); with that one queued the queue of one is
    full, and a further submission is retried a bounded number of times, then refused."""
    server = servers.open
    with server.client() as http:
        sleeper = http.post("/v1/submissions", json={
            "problem_id": PROBLEM, "source": SLEEPER_FILE.read_text(), "mode": "run"})
        assert sleeper.status_code == 202, sleeper.text
        deadline = time.monotonic() + 30
        while http.get(sleeper.headers["location"]).json()["status"] != "running":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        broken = home / "broken.py"
        broken.write_text(BROKEN + "# queued\n")
        start = time.monotonic()
        proc = jaxjudge(home, "submit", "--server", server.base_url, "-p", PROBLEM,
                        str(broken), "--timeout", "2")
        assert_clean_failure(proc, "no verdict within 2 s", "is still queued",
                             f"{server.base_url}/v1/submissions/")
        assert time.monotonic() - start < 15
        queued_id = proc.stderr.split("submission ")[1].split()[0]
        assert http.get(f"/v1/submissions/{queued_id}").json()["status"] == "queued"

        notices: list[str] = []
        client = JudgeClient(http, notify=notices.append)
        with pytest.raises(ClientError, match=r"grading queue is full.*retry in \d+ s.*tried"):
            client.grade(PROBLEM, BROKEN.encode(), "run", timeout=6)
        assert notices and all("busy" in n for n in notices)
        # The queued submission is graded once the worker is free: nothing was lost.
        assert wait_done(http, queued_id)["verdict"] == "compile_error"


# -- small pieces -------------------------------------------------------------------------------
def test_retry_after_and_clean_text() -> None:
    assert retry_after(httpx.Headers({"Retry-After": "7"})) == 7.0
    assert retry_after(httpx.Headers({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0
    assert retry_after(httpx.Headers({"Retry-After": "soon"})) is None
    assert retry_after(httpx.Headers()) is None
    assert clean_text("ok\t\n\x1b[2J\x9b31m\u202eevil") == "ok\t\n[2J31mevil"
