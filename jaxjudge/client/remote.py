"""A thin client for a remote jaxjudge server: submit a file, wait for its report, read problems.

`JudgeClient` wraps an `httpx.Client` the caller builds (`open_http`), so tests can hand it one
talking to a real server. The server is another machine: every answer is read with a size cap,
parsed as JSON, schema-checked, and any text shown to the user is stripped of terminal control
characters. Every failure is a `ClientError` whose message says what to do next; the CLI prints
it and exits with status 2.

Where the settings come from (first found wins):
  server: `--server`, then $JAXJUDGE_SERVER, then `server` in the config file;
  token:  $JAXJUDGE_TOKEN, then `token` in the config file.
The config file is $XDG_CONFIG_HOME/jaxjudge/client.toml (default ~/.config/jaxjudge/client.toml).
A token from the config file is only sent to the server named in that file (when it names one),
so `--server https://elsewhere` never receives it.
"""

from __future__ import annotations

import base64
import email.utils
import json
import math
import re
import stat
import time
import tomllib
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from jaxjudge.grading.report import Mode, Report

DEFAULT_TIMEOUT = 300.0  # seconds from submitting to a verdict (`--timeout`)
REQUEST_SECONDS = 30.0  # one HTTP request, at most
LONG_POLL = 20.0  # seconds a status request asks the server to hold it (< REQUEST_SECONDS)
MAX_ANSWER_BYTES = 32 * 1024 * 1024  # a report with every example's data fits many times over
MAX_ANSWER_DEPTH = 64  # a report nests ~10 deep (example arrays included)
MAX_SOURCE_BYTES = 16 * 1024 * 1024  # the largest max_source_bytes a server can be set to
QUEUE_FULL_RETRIES = 3  # 503 answers to one POST before giving up
MAX_RETRY_AFTER = 60.0  # longest Retry-After honoured without asking the user to come back
POLL_FIRST, POLL_FACTOR, POLL_MAX = 0.2, 1.5, 2.0  # seconds between status polls
MAX_POLL_ERRORS = 5  # consecutive transient failures while polling before giving up
ENV_SERVER, ENV_TOKEN = "JAXJUDGE_SERVER", "JAXJUDGE_TOKEN"
_CONFIG_KEYS = {"server", "token"}
_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# C0/C1 controls (ESC starts terminal escape sequences) and bidi overrides, minus tab/newline.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class ClientError(Exception):
    """The client could not get an answer; the message is for the person at the terminal."""


class GradeTimeout(ClientError):
    """No verdict within the client's timeout (the submission may still be graded)."""


class _Transient(ClientError):
    """A failure worth retrying while polling: transport errors and 5xx answers."""


class _NoAnswer(_Transient):
    """No answer came at all (connection lost, none in time): the request may or may not
    have reached the server."""


def _busy(code: str) -> str:
    """Why a 503 came, from its error code: both are worth retrying."""
    return {"queue_full": "its grading queue is full",
            "database_unavailable": "its database is unreachable"}.get(code, "it is unavailable")


def clean_text(text: str) -> str:
    """`text` without characters that could drive a terminal (escape sequences, bidi tricks)."""
    return _UNSAFE.sub("", text)


def _clean_tree(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [_clean_tree(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(str(k)): _clean_tree(v) for k, v in value.items()}
    return value


def clean_report(report: Report) -> Report:
    """The report with every string passed through `clean_text` (for terminal rendering)."""
    return Report.model_validate(_clean_tree(report.model_dump(mode="json")))


# -- settings ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClientConfig:
    """Where to send requests and with which token (and where each came from, for messages)."""

    server: str
    token: str | None
    token_source: str | None
    config_path: Path


def config_path(env: Mapping[str, str]) -> Path:
    """$XDG_CONFIG_HOME/jaxjudge/client.toml, defaulting to ~/.config/jaxjudge/client.toml."""
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "jaxjudge" / "client.toml"


def normalize_server(url: str, *, source: str = "--server") -> str:
    """`url` as a base URL without a trailing slash; ClientError unless it is http(s)://host."""
    text = url.strip()
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ClientError(f"{source}: {text!r} is not a valid URL") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ClientError(
            f"{source}: {text!r} is not an http(s) URL; e.g. --server http://127.0.0.1:8000"
        )
    if parsed.userinfo:
        raise ClientError(f"{source}: put the token in {ENV_TOKEN}, not in the URL")
    if parsed.query or parsed.fragment:
        raise ClientError(f"{source}: {text!r} must not have a query or fragment")
    return str(parsed.copy_with(path=parsed.path.rstrip("/") or "")).rstrip("/")


def _read_config_file(path: Path) -> dict[str, str]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ClientError(f"cannot read the config file {path}: {exc.strerror}") from exc
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ClientError(f"the config file {path} is not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - _CONFIG_KEYS)
    if unknown:
        raise ClientError(
            f"the config file {path} has unknown keys {unknown}; allowed: server, token"
        )
    for key, value in data.items():
        if not isinstance(value, str):
            raise ClientError(f"the config file {path}: {key} must be a string")
    return data


def _check_token(token: str, source: str) -> str:
    token = token.strip()
    if not token.isascii() or not token.isprintable() or " " in token:
        raise ClientError(
            f"the token from {source} has characters that cannot go in an HTTP header"
        )
    return token


def resolve_config(
    server: str | None,
    env: Mapping[str, str],
    warn: Callable[[str], None] | None = None,
) -> ClientConfig:
    """The server URL and token, by the precedence in the module docstring."""
    path = config_path(env)
    file = _read_config_file(path)
    if server is not None:
        chosen = normalize_server(server)
    elif env.get(ENV_SERVER, "").strip():
        chosen = normalize_server(env[ENV_SERVER], source=ENV_SERVER)
    elif file.get("server", "").strip():
        chosen = normalize_server(file["server"], source=f"server in {path}")
    else:
        raise ClientError(
            f"no server given: pass --server URL, set {ENV_SERVER}, "
            f'or put server = "http://..." in {path}'
        )
    token: str | None = None
    source: str | None = None
    if env.get(ENV_TOKEN, "").strip():
        token, source = _check_token(env[ENV_TOKEN], ENV_TOKEN), ENV_TOKEN
    elif file.get("token", "").strip():
        file_server = file.get("server", "").strip()
        if not file_server or normalize_server(file_server, source=str(path)) == chosen:
            token, source = _check_token(file["token"], str(path)), str(path)
            mode = path.stat().st_mode
            if warn and mode & (stat.S_IRWXG | stat.S_IRWXO):
                warn(f"{path} holds a token and other users can read it: chmod 600 {path}")
        elif warn:
            warn(f"not sending the token from {path} to {chosen}: it is for {file_server}")
    if token and warn and httpx.URL(chosen).scheme == "http" and not _loopback(chosen):
        warn(f"sending the token to {chosen} unencrypted (http, not https)")
    return ClientConfig(server=chosen, token=token, token_source=source, config_path=path)


def _loopback(server: str) -> bool:
    host = httpx.URL(server).host
    return host in ("localhost", "::1") or host.startswith("127.")


def _version() -> str:
    try:
        return metadata.version("jaxjudge")
    except metadata.PackageNotFoundError:
        return "0"


def open_http(config: ClientConfig) -> httpx.Client:
    """An httpx client for `config.server`: bearer token set, redirects not followed."""
    headers = {"User-Agent": f"jaxjudge-client/{_version()}", "Accept": "application/json"}
    if config.token:
        headers["Authorization"] = f"Bearer {config.token}"
    return httpx.Client(
        base_url=config.server + "/",
        headers=headers,
        timeout=REQUEST_SECONDS,
        follow_redirects=False,
    )


# -- what the server answers (only the fields the client uses; the rest is ignored) ---------------
class _Answer(BaseModel):
    model_config = ConfigDict(extra="ignore")


class SubmissionInfo(_Answer):
    id: str = Field(pattern=_ID.pattern)
    problem_id: str
    mode: Mode
    status: Literal["queued", "running", "done"]
    report: Report | None = None


class ProblemInfo(_Answer):
    id: str = Field(max_length=200)
    title: str
    difficulty: str
    tags: list[str] = Field(default_factory=list)
    summary: str = ""


class ProblemDetail(ProblemInfo):
    statement: str
    starter: str


@dataclass
class _Response:
    status: int
    headers: httpx.Headers
    body: Any


def retry_after(headers: httpx.Headers) -> float | None:
    """The Retry-After header in seconds (delta or HTTP date), or None if absent or invalid."""
    value = headers.get("retry-after", "").strip()
    if value.isdigit():
        return float(min(int(value), 86400))
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, min(86400.0, (when - datetime.now(UTC)).total_seconds()))


class JudgeClient:
    """Talks to one jaxjudge server through `http` (base_url and auth already set on it).

    `notify` receives one-line notices (e.g. "rate limited; retrying in 2 s"); `token_source`
    says where the token came from, so a 401 can say which setting to fix.
    """

    def __init__(
        self,
        http: httpx.Client,
        *,
        token_source: str | None = None,
        config_file: Path | None = None,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        self.http = http
        self.server = str(http.base_url).rstrip("/")
        self.token_source = token_source
        self.config_file = config_file
        self.notify = notify or (lambda _message: None)

    # -- the HTTP layer ----------------------------------------------------------------------
    def _send(self, method: str, path: str, deadline: float, body: Any = None,
              headers: dict[str, str] | None = None) -> _Response:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise GradeTimeout(f"no answer from {self.server} in time")
        timeout = min(remaining, REQUEST_SECONDS)
        try:
            request = self.http.build_request(method, path, json=body, timeout=timeout,
                                              headers=headers)
            response = self.http.send(request, stream=True)
            try:
                raw = _read_capped(response)
            finally:
                response.close()
        except httpx.ConnectError as exc:
            raise ClientError(
                f"cannot reach the jaxjudge server at {self.server} ({_reason(exc)}); "
                "is it running, and is the URL right?"
            ) from exc
        except httpx.TimeoutException as exc:
            if timeout < REQUEST_SECONDS:  # cut short by the caller's deadline, not the server
                raise GradeTimeout(f"no answer from {self.server} in time") from exc
            raise _NoAnswer(
                f"the server at {self.server} did not answer within {timeout:.0f} s"
            ) from exc
        except (httpx.TransportError, httpx.StreamError) as exc:
            raise _NoAnswer(
                f"the connection to {self.server} failed ({_reason(exc)})"
            ) from exc
        except httpx.HTTPError as exc:  # invalid URL built from the base and path, etc.
            raise ClientError(f"cannot talk to {self.server}: {_reason(exc)}") from exc
        status = response.status_code
        if 300 <= status < 400:
            where = clean_text(response.headers.get("location", "?"))[:200]
            raise ClientError(
                f"the server at {self.server} redirects to {where}; use that address as --server"
            )
        try:
            parsed = json.loads(raw)
        except RecursionError as exc:
            raise ClientError(f"the answer of {self.server} is nested too deeply") from exc
        except ValueError as exc:
            kind = clean_text(response.headers.get("content-type", "no content type"))[:80]
            error = _Transient if status >= 500 else ClientError
            raise error(
                f"the server at {self.server} answered HTTP {status} with {len(raw)} bytes of "
                f"{kind}, not JSON: is it a jaxjudge server (check the URL)?"
            ) from exc
        if _depth(parsed) > MAX_ANSWER_DEPTH:
            raise ClientError(f"the answer of {self.server} is nested too deeply")
        return _Response(status, response.headers, parsed)

    def _error(self, answer: _Response, what: str, hint_404: str = "") -> ClientError:
        """The ClientError for a non-2xx answer, with what the user can do about it."""
        status, body = answer.status, answer.body
        code = message = ""
        if isinstance(body, dict):
            code = clean_text(str(body.get("error", "")))[:64]
            message = clean_text(str(body.get("message", "")))[:500]
        told = f": {message}" if message else ""
        wait = retry_after(answer.headers)
        later = f"; retry in {math.ceil(wait)} s" if wait is not None else "; retry later"
        if status == 401:
            if self.token_source:
                return ClientError(
                    f"the server at {self.server} rejected the token from {self.token_source}"
                    f"{told}; check it"
                )
            where = self.config_file or "~/.config/jaxjudge/client.toml"
            return ClientError(
                f"the server at {self.server} needs a token{told}. Set {ENV_TOKEN}=<token>, "
                f'or put token = "<token>" in {where}'
            )
        if status == 404:
            said = message or f"{what}: not found"
            return ClientError(f"{said} on {self.server}{hint_404}")
        if status == 413:
            return ClientError(f"{what}: too large for the server{told}")
        if status == 422:
            return ClientError(f"{what}: the server refused it{told}")
        if status == 429:
            return ClientError(f"rate limited by the server at {self.server}{told}{later}")
        if status == 503:
            return _Transient(f"the server at {self.server} is busy ({_busy(code)}){later}")
        error = _Transient if status >= 500 else ClientError
        return error(f"{what}: the server at {self.server} answered HTTP {status}{told}")

    def _call(self, method: str, path: str, what: str, deadline: float, body: Any = None,
              *, queue_retries: int = 0, hint_404: str = "", transport_retries: int = 0,
              headers: dict[str, str] | None = None) -> Any:
        """One logical request. A 429 is retried once, after its Retry-After, if that fits
        before `deadline`; a 503 up to `queue_retries` times with backoff (Retry-After, at
        least 1, 2, 4 s); a request with no answer at all (connection lost, no response in
        time) up to `transport_retries` times, 1, 2 s apart: only for requests that are safe
        to repeat. Any other non-2xx answer is a ClientError."""
        attempts = 0
        lost = 0
        rate_limited = False
        while True:
            attempts += 1
            try:
                answer = self._send(method, path, deadline, body, headers)
            except _NoAnswer as exc:
                lost += 1
                if lost <= transport_retries and self._can_wait(float(lost), deadline):
                    self.notify(f"{exc}; trying again")
                    time.sleep(float(lost))
                    continue
                raise
            if answer.status < 300:
                return answer.body
            error = self._error(answer, what, hint_404)
            wait = retry_after(answer.headers)
            if answer.status == 429 and not rate_limited:
                rate_limited = True
                if wait is not None and self._can_wait(wait, deadline):
                    self.notify(f"rate limited by the server; retrying in {math.ceil(wait)} s")
                    time.sleep(wait)
                    continue
            elif answer.status == 503 and queue_retries:
                wait = max(wait or 0.0, 2.0 ** (attempts - 1))
                if attempts <= queue_retries and self._can_wait(wait, deadline):
                    code = answer.body.get("error") if isinstance(answer.body, dict) else None
                    self.notify(f"the server is busy ({_busy(str(code))}); trying again in "
                                f"{math.ceil(wait)} s")
                    time.sleep(wait)
                    continue
                tries = "once" if attempts == 1 else f"{attempts} times"
                raise ClientError(f"{error} (tried {tries})")
            raise error

    @staticmethod
    def _can_wait(seconds: float, deadline: float) -> bool:
        return seconds <= MAX_RETRY_AFTER and time.monotonic() + seconds < deadline - 1.0

    @staticmethod
    def _parse(model: type[_Answer], body: Any, what: str) -> Any:
        try:
            return model.model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "answer"
            raise ClientError(
                f"{what}: the server's answer is not what jaxjudge expects "
                f"({where}: {first['msg']}); are client and server versions compatible?"
            ) from exc

    def _list_hint(self) -> str:
        return f" (`jaxjudge problems --server {self.server}` lists its problems)"

    # -- problems ----------------------------------------------------------------------------
    def problems(self, timeout: float = DEFAULT_TIMEOUT) -> list[ProblemInfo]:
        """The server's problem list."""
        deadline = time.monotonic() + timeout
        body = self._call("GET", "v1/problems", "listing problems", deadline)
        if not isinstance(body, list):
            raise ClientError(f"listing problems: {self.server} did not answer a JSON list")
        return [self._parse(ProblemInfo, item, "listing problems") for item in body]

    def problem(self, problem_id: str, timeout: float = DEFAULT_TIMEOUT) -> ProblemDetail:
        """One problem's statement and starter code."""
        what = f"problem {problem_id!r}"
        _check_problem_id(problem_id)
        deadline = time.monotonic() + timeout
        body = self._call("GET", f"v1/problems/{problem_id}", what, deadline,
                          hint_404=self._list_hint())
        detail: ProblemDetail = self._parse(ProblemDetail, body, what)
        return detail

    # -- submissions -------------------------------------------------------------------------
    def submit(self, problem_id: str, source: bytes, mode: Mode, deadline: float
               ) -> SubmissionInfo:
        """POST the file (base64, so any bytes arrive as they are); 503 is retried."""
        _check_problem_id(problem_id)
        if len(source) > MAX_SOURCE_BYTES:
            raise ClientError(f"the file is {len(source)} bytes; no server accepts more than "
                              f"{MAX_SOURCE_BYTES}")
        body = {
            "problem_id": problem_id,
            "mode": mode,
            "source_b64": base64.b64encode(source).decode("ascii"),
        }
        what = f"submitting to problem {problem_id!r}"
        # One key for every try of this POST: a retry after a lost answer gets the submission
        # the first try made (servers without idempotency keys ignore the header).
        key = {"Idempotency-Key": uuid.uuid4().hex}
        answer = self._call("POST", "v1/submissions", what, deadline, body,
                            queue_retries=QUEUE_FULL_RETRIES, hint_404=self._list_hint(),
                            transport_retries=2, headers=key)
        info: SubmissionInfo = self._parse(SubmissionInfo, answer, what)
        return info

    def status(self, submission_id: str, deadline: float, hold: float = 0.0) -> SubmissionInfo:
        """The submission now, or (`hold` > 0: a long poll) as soon as it is done, at most
        `hold` seconds later (servers without long polls answer at once)."""
        if not _ID.match(submission_id):
            raise ClientError(f"{submission_id!r} is not a submission id")
        what = f"submission {submission_id}"
        path = f"v1/submissions/{submission_id}"
        if hold > 0:
            path += f"?wait={hold:.1f}"
        info: SubmissionInfo = self._parse(
            SubmissionInfo, self._call("GET", path, what, deadline), what
        )
        return info

    def wait(
        self,
        submission: SubmissionInfo,
        deadline: float,
        on_status: Callable[[str], None] | None = None,
    ) -> SubmissionInfo:
        """Long-poll until the submission is done: each request is held by the server until
        the grade is stored (at most LONG_POLL seconds), so the verdict arrives when it is
        ready. A server that answers at once (an older one, or one with no wait bound) is
        polled with backoff (POLL_FIRST..POLL_MAX) instead. Transient errors are retried
        MAX_POLL_ERRORS times in a row. GradeTimeout at `deadline`."""
        interval, errors, current = POLL_FIRST, 0, submission
        answered_at_once = False
        while current.status != "done":
            if on_status:
                on_status(current.status)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise GradeTimeout(
                    f"submission {current.id} is still {current.status} on {self.server}; "
                    f"see {self.server}/v1/submissions/{current.id} later"
                )
            if answered_at_once:
                time.sleep(min(interval, max(0.0, remaining - 0.1)))
                interval = min(interval * POLL_FACTOR, POLL_MAX)
            hold = max(0.0, min(LONG_POLL, remaining - 1.0))
            asked = time.monotonic()
            try:
                current = self.status(current.id, deadline, hold=hold)
                answered_at_once = time.monotonic() - asked < min(1.0, hold / 2)
                errors = 0
            except GradeTimeout:
                continue  # the check at the top of the loop says which submission
            except _Transient as exc:
                errors += 1
                answered_at_once = True  # back off before asking again
                if errors >= MAX_POLL_ERRORS:
                    raise ClientError(f"{exc} (submission {current.id})") from exc
                self.notify(f"{exc}; retrying")
            except ClientError as exc:
                raise ClientError(f"{exc} (submission {current.id})") from exc
        return current

    def grade(
        self,
        problem_id: str,
        source: bytes,
        mode: Mode,
        timeout: float = DEFAULT_TIMEOUT,
        on_status: Callable[[str], None] | None = None,
        on_submitted: Callable[[SubmissionInfo], None] | None = None,
    ) -> Report:
        """Submit, wait, and return the report (checked to be for this problem and mode)."""
        deadline = time.monotonic() + timeout
        submitted = self.submit(problem_id, source, mode, deadline)
        if on_submitted:
            on_submitted(submitted)
        try:
            done = self.wait(submitted, deadline, on_status)
        except GradeTimeout as exc:
            raise GradeTimeout(f"no verdict within {timeout:g} s: {exc}") from exc
        report = done.report
        if report is None:
            raise ClientError(f"submission {done.id} is done but {self.server} sent no report")
        if (done.id, report.problem, report.mode) != (submitted.id, problem_id, mode):
            raise ClientError(
                f"{self.server} answered with a report for {report.problem!r} ({report.mode}) "
                f"instead of {problem_id!r} ({mode})"
            )
        return report


def _check_problem_id(problem_id: str) -> None:
    # The id goes into a URL path: refuse anything that could change which path is asked for.
    if not _ID.match(problem_id):
        raise ClientError(f"unknown problem {problem_id!r} (ids are letters, digits, - and _)")


def _depth(value: Any) -> int:
    """How deeply lists and objects nest in a parsed JSON value (iterative: no recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in item)
    return deepest


def _read_capped(response: httpx.Response) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_ANSWER_BYTES:
        raise ClientError(f"the server's answer is {declared} bytes, over the client's limit")
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise ClientError(
                f"the server's answer is over {MAX_ANSWER_BYTES} bytes; stopped reading"
            )
        chunks.append(chunk)
    return b"".join(chunks)


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    # "[Errno 111] Connection refused" reads better without the errno.
    return clean_text(re.sub(r"^\[Errno -?\d+\]\s*", "", text))[:200]

