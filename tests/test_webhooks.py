"""Webhooks (jaxjudge/service/webhooks.py) against real receivers: HTTP and TLS servers in threads
on loopback.

Every defence has the attacker's URL or receiver that tries it and an honest-but-unusual case
that must still work. Loopback receivers need `allow_private=True`; the tests that prove a
refusal point at a live receiver and check that it saw nothing.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
import trustme
from api_fixtures import Answer, Receiver, answer_status
from pydantic import ValidationError

from jaxjudge.service.config import Settings
from jaxjudge.service.webhooks import (
    EVENT,
    MAX_RESPONSE_BYTES,
    MAX_URL_LENGTH,
    USER_AGENT,
    CallbackPolicy,
    CallbackRejected,
    DeliveryResult,
    _resolve,
    address_problem,
    callback_body,
    check_callback_url,
    deliver,
    retry_delay,
    signature_header,
    verify_signature,
)

SECRET = b"k" * 32
ANYWHERE = CallbackPolicy(("*",), allow_private=False, allow_http=True)
LOOPBACK_OK = CallbackPolicy(("*",), allow_private=True, allow_http=True)

@pytest.fixture
def receivers() -> Iterator[Callable[..., Receiver]]:
    started: list[Receiver] = []

    def start(answer: Answer = answer_status(204), tls: ssl.SSLContext | None = None) -> Receiver:
        r = Receiver(answer, tls)
        started.append(r)
        return r

    yield start
    for r in started:
        r.close()


def send(url: str, policy: CallbackPolicy = LOOPBACK_OK, **kw: Any) -> DeliveryResult:
    body = kw.pop("body", b'{"event":"submission.graded"}')
    kw.setdefault("secret", SECRET)
    kw.setdefault("delivery_id", "sub-1")
    return deliver(url, body, policy=policy, **kw)


# -- signing -----------------------------------------------------------------------------------
def test_signed_delivery_is_verified_by_the_receiver(receivers: Callable[..., Receiver]) -> None:
    def verifying(h: http.server.BaseHTTPRequestHandler) -> None:
        req = r.requests[-1]  # what this very request carried
        ok = verify_signature(SECRET, req["headers"]["X-Jaxjudge-Signature"], req["body"])
        answer_status(204 if ok else 401)(h)

    r = receivers(verifying)
    body = callback_body(submission_id="s-42", problem_id="p", mode="submit", status="done",
                         verdict="accepted", score=10.0, max_score=10.0,
                         finished_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))
    result = send(r.url(path="/hook?team=7"), body=body, delivery_id="s-42")
    assert result == DeliveryResult(ok=True, status_code=204, error=None, retryable=False)
    (req,) = r.requests
    assert req["body"] == body and req["path"] == "/hook?team=7"
    h = req["headers"]
    assert h["Content-Type"] == "application/json"
    assert h["User-Agent"] == USER_AGENT and USER_AGENT.startswith("jaxjudge-webhook/")
    assert h["X-Jaxjudge-Event"] == EVENT == "submission.graded"
    assert h["X-Jaxjudge-Delivery"] == "s-42"
    assert h["Host"] == f"127.0.0.1:{r.port}"
    # The same receiver with another secret refuses it: the 204 above was earned.
    result = send(r.url(), secret=b"x" * 32)
    assert (result.ok, result.status_code, result.retryable) == (False, 401, False)


def test_tampered_body_old_or_future_timestamp_are_rejected() -> None:
    body = b'{"verdict":"wrong_answer"}'
    header = signature_header(SECRET, 1_700_000_000, body)
    assert header.startswith("t=1700000000,v1=") and len(header.split("v1=")[1]) == 64
    assert verify_signature(SECRET, header, body, now=1_700_000_000)
    assert verify_signature(SECRET, header, body, now=1_700_000_299)  # clock skew: fine
    assert not verify_signature(SECRET, header, body, now=1_700_000_301)  # replayed later
    assert not verify_signature(SECRET, header, body, now=1_699_999_699)  # from the future
    assert not verify_signature(SECRET, header, b'{"verdict":"accepted"}', now=1_700_000_000)
    assert not verify_signature(b"y" * 32, header, body, now=1_700_000_000)
    # A re-stamped old signature: the timestamp is part of what is signed.
    sig = header.split("v1=")[1]
    assert not verify_signature(SECRET, f"t=1700000100,v1={sig}", body, now=1_700_000_100)
    # Honest but unusual: spaces, key order, a second v1 (secret rotation), unknown keys.
    other = signature_header(b"z" * 32, 1_700_000_000, body).split("v1=")[1]
    assert verify_signature(SECRET, f"v1={other}, v0=abc, t=1700000000, v1={sig}", body,
                            now=1_700_000_000)
    for bad in ["", "t=1700000000", f"v1={sig}", f"t=x,v1={sig}", f"t=-5,v1={sig}",
                f"t=1700000000,t=1700000000,v1={sig}", f"t=1700000000,v1={sig},junk",
                f"t=١٧٠٠٠٠٠٠٠٠,v1={sig}", "t=1700000000,v1=é", "x" * 5000, None]:
        assert verify_signature(SECRET, bad, body, now=1_700_000_000) is False  # type: ignore


def test_callback_body_is_compact_deterministic_json() -> None:
    kw: dict[str, Any] = dict(submission_id="s1", problem_id="p", mode="run", status="done",
                              verdict=None, score=None, max_score=4.0,
                              finished_at=datetime(2025, 5, 6, 7, 8, 9))  # naive = UTC
    body = callback_body(**kw)
    assert body == callback_body(**kw) and b" " not in body
    assert json.loads(body) == {
        "event": "submission.graded", "submission_id": "s1", "problem_id": "p", "mode": "run",
        "status": "done", "verdict": None, "score": None, "max_score": 4.0,
        "finished_at": "2025-05-06T07:08:09Z",
    }


# -- the address rules -------------------------------------------------------------------------
LOOPBACK_SPELLINGS = ["127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "0x7f.0.0.1",
                      "127.1", "127.0.0.01", "0.0.0.0", "[::1]", "[::ffff:127.0.0.1]",
                      "[::ffff:7f00:1]", "[2002:7f00:1::]", "[::]",
                      # full-width digits, ideographic dots, a trailing dot: one IDNA mapping
                      "１２７.0.0.1", "127。0。0。1", "127.0.0.1."]


@pytest.mark.parametrize("host", LOOPBACK_SPELLINGS)
def test_loopback_in_any_spelling_reaches_nothing(
    host: str, receivers: Callable[..., Receiver]
) -> None:
    r = receivers()
    with pytest.raises(CallbackRejected) as exc:
        check_callback_url(r.url(host), ANYWHERE)
    assert "address" in str(exc.value)
    result = send(r.url(host), ANYWHERE)
    assert not result.ok and not result.retryable and result.status_code is None
    assert r.requests == []  # the refusal happened before any connection


def test_a_url_that_normalizes_past_the_length_bound_is_refused() -> None:
    """Punycode makes a non-ASCII host longer than it was typed: a URL of exactly the bound
    would not fit the column it is stored in (a 500 on PostgreSQL) nor be deliverable."""
    host = ".".join(["ü" * 20] * 4) + ".example"
    url = f"https://{host}/"
    url += "a" * (MAX_URL_LENGTH - len(url))
    with pytest.raises(CallbackRejected, match="once normalized"):
        check_callback_url(url, ANYWHERE)
    ascii_url = "https://hooks.example/" + "a" * (MAX_URL_LENGTH - len("https://hooks.example/"))
    assert check_callback_url(ascii_url, ANYWHERE) == ascii_url  # the bound itself is fine


def test_a_loopback_name_in_full_width_letters_is_refused() -> None:
    with pytest.raises(CallbackRejected, match="loopback name"):
        check_callback_url("https://ｌｏｃａｌｈｏｓｔ/hook", ANYWHERE)


@pytest.mark.parametrize("host", ["169.254.169.254", "100.64.0.1", "10.0.0.1", "192.168.1.1",
                                  "172.16.0.1", "[fc00::1]", "[fe80::1]", "[64:ff9b::a9fe:a9fe]",
                                  "224.0.0.1", "255.255.255.255", "240.0.0.1", "[ff02::1]",
                                  "[fec0::1]"])  # site-local: Python calls it global
def test_private_link_local_cgnat_multicast_literals_are_refused(host: str) -> None:
    with pytest.raises(CallbackRejected, match="address"):
        check_callback_url(f"https://{host}/hook", ANYWHERE)


def test_allow_private_lets_a_lan_through_but_never_unspecified_or_multicast(
    receivers: Callable[..., Receiver],
) -> None:
    lan = CallbackPolicy(("*",), allow_private=True)
    for host in ["10.1.2.3", "192.168.0.10", "100.64.0.1", "[fd00::5]", "127.0.0.1"]:
        assert check_callback_url(f"https://{host}/h", lan) == f"https://{host}/h"
    for host in ["0.0.0.0", "[::]", "224.0.0.1", "255.255.255.255"]:
        with pytest.raises(CallbackRejected):
            check_callback_url(f"https://{host}/h", lan)
    r = receivers()
    assert send(r.url("0.0.0.0"), LOOPBACK_OK).ok is False and r.requests == []
    assert send(r.url("127.0.0.1"), LOOPBACK_OK).ok is True and len(r.requests) == 1


def test_public_literals_and_unusual_but_honest_urls_pass() -> None:
    p = CallbackPolicy(("*",))
    cases = {
        "https://8.8.8.8/h": "https://8.8.8.8/h",
        "https://[2606:4700:4700::1111]:8443/h": "https://[2606:4700:4700::1111]:8443/h",
        "HTTPS://Hooks.Example.ORG./a/b?x=1&y=%20": "https://hooks.example.org/a/b?x=1&y=%20",
        "https://bücher.example/cb": "https://xn--bcher-kva.example/cb",
        "https://hooks.example.org:443": "https://hooks.example.org/",
        "https://hooks.example.org:8443/": "https://hooks.example.org:8443/",
        "https://1.example.org/": "https://1.example.org/",  # a digit label, not an address
        "https://0x.example.org/": "https://0x.example.org/",
    }
    for url, normalized in cases.items():
        assert check_callback_url(url, p) == normalized
    long_ok = "https://hooks.example.org/" + "a" * (2048 - 26)
    assert len(long_ok) == 2048 and check_callback_url(long_ok, p) == long_ok


@pytest.mark.parametrize(("url", "why"), [
    ("https://hooks.example.org/" + "a" * 2023, "longer than 2048"),
    ("ftp://hooks.example.org/", "https://"),
    ("javascript:alert(1)", "https://"),
    ("//hooks.example.org/", "https://"),
    ("http://hooks.example.org/", "plain http"),
    ("https://user:pw@hooks.example.org/", "user name"),
    ("https://hooks.example.org@evil.example.com/", "user name"),
    ("https://evil.example.com#@hooks.example.org/", "fragment"),
    ("https://hooks.example.org/#frag", "fragment"),
    ("https://evil.example.com\\@hooks.example.org/", "'\\'"),
    ("https://hooks.example.org/a b", "whitespace"),
    ("https://hooks.example.org/\r\nX-Evil: 1", "whitespace"),
    ("https:///nohost", "no host"),
    ("https://hooks.example.org:0/", "port 0"),
    ("https://hooks.example.org:99999/", "not a valid URL"),
    ("https://[::1/", "not a valid URL"),
    ("https://hooks.example.org/é", "non-ASCII"),
    ("https://localhost/", "loopback name"),
    ("https://LOCALHOST./", "loopback name"),
    ("https://api.localhost/", "loopback name"),
    ("https://bad_host!.example.org/", "host"),
])
def test_malformed_or_smuggling_urls_are_refused(url: str, why: str) -> None:
    with pytest.raises(CallbackRejected) as exc:
        check_callback_url(url, CallbackPolicy(("*",)))
    assert why in str(exc.value)


def test_allow_list_exact_and_wildcard() -> None:
    p = CallbackPolicy(("*.Example.org", "hooks.test.com", "[2001:db8::1]", "203.0.113.9"),
                       allow_private=True)
    assert p.allowed_hosts == ("*.example.org", "hooks.test.com", "2001:db8::1", "203.0.113.9")
    for ok in ["https://a.example.org/", "https://a.b.example.org/x", "https://HOOKS.test.com/",
               "https://[2001:db8::1]/", "https://203.0.113.9/"]:
        check_callback_url(ok, p)
    for bad in ["https://example.org/", "https://evilexample.org/", "https://example.org.evil.com/",
                "https://x.hooks.test.com/", "https://test.com/", "https://203.0.113.10/",
                "https://[2001:db8::2]/"]:
        with pytest.raises(CallbackRejected, match="allow-list"):
            check_callback_url(bad, p)
    with pytest.raises(CallbackRejected, match="not enabled"):
        check_callback_url("https://a.example.org/", CallbackPolicy(()))
    for entry in ["https://a.org", "a.org/path", "*a.org", "a.*.org", "**.a.org", ""]:
        with pytest.raises(ValueError):
            CallbackPolicy((entry,))


def test_a_name_resolving_to_loopback_is_refused_at_delivery(
    receivers: Callable[..., Receiver],
) -> None:
    # "localhost" through the real resolver: every address it gives is loopback.
    addresses = _resolve("localhost", 80, 5.0)
    assert addresses and all(a.is_loopback for a in addresses)
    assert all(address_problem(a, allow_private=False) == "a loopback address" for a in addresses)
    # A name that is not spelled like loopback (this machine's name, or one from /etc/hosts)
    # and that the resolver maps to a non-public address: refused by deliver, nothing sent.
    name = _non_public_name()
    r = receivers()
    names_only = CallbackPolicy((name,), allow_private=False, allow_http=True)
    assert check_callback_url(r.url(name), names_only)  # no DNS at submit time
    result = send(r.url(name), names_only)
    assert not result.ok and not result.retryable
    assert f"{name} resolves to a" in (result.error or "") and r.requests == []
    # Honest: the same name with allow_private (a LAN receiver) is delivered.
    lan = CallbackPolicy((name,), allow_private=True, allow_http=True)
    assert send(r.url(name), lan).ok and len(r.requests) == 1


def _non_public_name() -> str:
    names = [socket.gethostname()]
    with contextlib.suppress(OSError), open("/etc/hosts", encoding="utf-8") as f:
        for line in f:
            fields = line.split("#")[0].split()
            if fields and fields[0].startswith("127."):
                names += fields[1:]
    for name in names:
        if name == "localhost" or name.endswith(".localhost"):
            continue
        with contextlib.suppress(OSError, TimeoutError, ValueError):
            addrs = _resolve(name, 80, 5.0)
            if any(a.version == 4 and a.is_loopback for a in addrs):
                return name
    pytest.skip("no host name other than localhost resolves to 127.0.0.0/8 here")


# -- delivery outcomes -------------------------------------------------------------------------
@pytest.mark.parametrize(("code", "ok", "retryable"), [
    (200, True, False), (204, True, False), (202, True, False),
    (500, False, True), (503, False, True), (408, False, True), (429, False, True),
    (400, False, False), (401, False, False), (404, False, False), (410, False, False),
])
def test_status_codes(code: int, ok: bool, retryable: bool,
                      receivers: Callable[..., Receiver]) -> None:
    r = receivers(answer_status(code, b"nope: \x00details\n" if code >= 400 else b""))
    result = send(r.url())
    assert (result.ok, result.status_code, result.retryable) == (ok, code, retryable)
    if not ok:
        assert result.error and f"HTTP {code}: nope:  details" in result.error
    assert len(r.requests) == 1


def test_redirect_is_not_followed(receivers: Callable[..., Receiver]) -> None:
    target = receivers()
    r = receivers(answer_status(307, headers={"Location": target.url()}))
    result = send(r.url())
    assert (result.ok, result.status_code, result.retryable) == (False, 307, False)
    assert "redirects are not followed" in (result.error or "")
    assert len(r.requests) == 1 and target.requests == []


def test_environment_proxy_is_ignored(
    receivers: Callable[..., Receiver], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A proxy would connect by name after our check (and see every payload): never used.
    # (Two guards: trust_env=False, and httpx ignores the environment for a given transport.)
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    proxy = f"http://127.0.0.1:{dead.getsockname()[1]}"
    dead.close()
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(var, proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    r = receivers()
    assert send(r.url()).ok and len(r.requests) == 1


def test_connection_refused_and_garbage_answers_are_retryable(
    receivers: Callable[..., Receiver],
) -> None:
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    result = send(f"http://127.0.0.1:{port}/")
    assert (result.ok, result.retryable) == (False, True) and "could not connect" in result.error

    def garbage(h: http.server.BaseHTTPRequestHandler) -> None:
        h.wfile.write(b"SSH-2.0-OpenSSH\r\n\r\n")
        h.close_connection = True

    def hang_up(h: http.server.BaseHTTPRequestHandler) -> None:
        h.close_connection = True

    for answer in (garbage, hang_up):
        r = receivers(answer)
        result = send(r.url())
        assert (result.ok, result.status_code, result.retryable) == (False, None, True)
        assert len(r.requests) == 1


def test_slow_receiver_times_out_within_the_bound(receivers: Callable[..., Receiver]) -> None:
    def slow(h: http.server.BaseHTTPRequestHandler) -> None:
        time.sleep(4)
        answer_status(204)(h)

    r = receivers(slow)
    t0 = time.monotonic()
    result = send(r.url(), timeout=1.0)
    elapsed = time.monotonic() - t0
    assert (result.ok, result.retryable) == (False, True) and "timed out" in (result.error or "")
    assert 0.9 <= elapsed < 2.0, elapsed


def test_trickling_receiver_is_cut_at_the_deadline(receivers: Callable[..., Receiver]) -> None:
    # One byte every 0.1 s: no single read ever waits a second, so only the deadline on the
    # whole attempt stops it (httpx's own timeouts are per read).
    def trickle(h: http.server.BaseHTTPRequestHandler) -> None:
        with contextlib.suppress(OSError):
            for byte in b"HTTP/1.1 200 OK\r\nX-Padding: " + b"a" * 200:
                h.wfile.write(bytes([byte]))
                h.wfile.flush()
                time.sleep(0.1)
        h.close_connection = True

    r = receivers(trickle)
    t0 = time.monotonic()
    result = send(r.url(), timeout=1.0)
    elapsed = time.monotonic() - t0
    assert (result.ok, result.retryable) == (False, True) and "timed out" in (result.error or "")
    assert 0.9 <= elapsed < 2.0, elapsed


def test_a_trickled_tls_handshake_is_cut_at_the_deadline() -> None:
    # A "server" that starts a 16 KiB TLS record and sends it a byte every 0.1 s. Python's
    # ssl bounds a whole handshake by the socket timeout, and our deadline backs it up.
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    gave_up = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn, contextlib.suppress(OSError):
            conn.recv(4096)  # the ClientHello
            conn.sendall(b"\x16\x03\x03\x40\x00")
            for _ in range(100):
                conn.sendall(b"\x02")
                time.sleep(0.1)
            return
        gave_up.set()

    threading.Thread(target=serve, daemon=True).start()
    policy = CallbackPolicy(("localhost",), allow_private=True)
    t0 = time.monotonic()
    result = send(f"https://localhost:{port}/", policy, timeout=1.0)
    elapsed = time.monotonic() - t0
    listener.close()
    assert (result.ok, result.retryable) == (False, True) and "timed out" in (result.error or "")
    assert 0.9 <= elapsed < 2.0, elapsed
    assert gave_up.wait(3), "the connection was not shut down"


def test_a_100_mb_answer_is_not_read(receivers: Callable[..., Receiver]) -> None:
    size = 100 * 2**20
    finished = threading.Event()

    def huge(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Length", str(size))
        h.end_headers()
        chunk = b"\0" * 65536
        with contextlib.suppress(OSError):
            while r.sent < size:
                h.wfile.write(chunk)
                r.sent += len(chunk)
        h.close_connection = True
        finished.set()

    r = receivers(huge)
    t0 = time.monotonic()
    result = send(r.url(), timeout=20.0)
    elapsed = time.monotonic() - t0
    assert result == DeliveryResult(ok=True, status_code=200, error=None, retryable=False)
    assert elapsed < 5.0, elapsed
    assert finished.wait(10), "the receiver was never cut off"
    # What the receiver got rid of is what fit in the two socket buffers, not 100 MB.
    assert r.sent < size // 4, f"{r.sent / 2**20:.1f} MiB sent"
    assert MAX_RESPONSE_BYTES == 64 * 1024


# -- TLS: pinned address, certificate checked for the name -------------------------------------
@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def tls_server_context(ca: trustme.CA, *names: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(ctx)
    return ctx


class Recording(httpx.BaseTransport):
    """A real transport that notes where each request was sent (its URL's host)."""

    def __init__(self, ca: trustme.CA) -> None:
        ctx = ssl.create_default_context()
        ca.configure_trust(ctx)
        self.inner = httpx.HTTPTransport(verify=ctx, retries=0)
        self.urls: list[httpx.URL] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.urls.append(request.url)
        return self.inner.handle_request(request)


def test_https_goes_to_the_vetted_address_and_verifies_the_name(
    ca: trustme.CA, receivers: Callable[..., Receiver]
) -> None:
    r = receivers(tls=tls_server_context(ca, "localhost"))  # no IP in the certificate
    policy = CallbackPolicy(("localhost",), allow_private=True)
    transport = Recording(ca)
    result = send(r.url("localhost", scheme="https"), policy, transport=transport)
    assert result == DeliveryResult(ok=True, status_code=204, error=None, retryable=False)
    assert {u.host for u in transport.urls} <= {"127.0.0.1", "::1"}  # the address, not a name
    assert transport.urls[-1].host == "127.0.0.1"
    assert r.sni == ["localhost"]
    assert r.requests[0]["headers"]["Host"] == f"localhost:{r.port}"
    # Without our CA (the default trust store) the same receiver is refused.
    result = send(r.url("localhost", scheme="https"), policy)
    assert (result.ok, result.retryable) == (False, True) and "TLS certificate" in result.error


def test_https_certificate_for_another_name_fails(
    ca: trustme.CA, receivers: Callable[..., Receiver]
) -> None:
    r = receivers(tls=tls_server_context(ca, "hooks.example.org", "127.0.0.1"))
    policy = CallbackPolicy(("localhost", "127.0.0.1"), allow_private=True)
    result = send(r.url("localhost", scheme="https"), policy, transport=Recording(ca))
    assert (result.ok, result.status_code, result.retryable) == (False, None, True)
    assert "TLS certificate of localhost not accepted" in (result.error or "")
    assert "localhost" in (result.error or "") and r.requests == []
    # Honest: an IP-literal URL is checked against the certificate's IP address.
    result = send(r.url("127.0.0.1", scheme="https"), policy, transport=Recording(ca))
    assert result.ok and len(r.requests) == 1


# -- retries and settings ----------------------------------------------------------------------
def test_retry_delay_grows_with_jitter_and_a_cap() -> None:
    for attempt in range(1, 12):
        nominal = min(3600.0, 5.0 * 3.0 ** (attempt - 1))
        for _ in range(20):
            assert 0.8 * nominal <= retry_delay(attempt) <= nominal
    assert len({retry_delay(3) for _ in range(20)}) > 1  # jittered
    assert retry_delay(0) <= 5.0 and retry_delay(10**6) <= 3600.0
    total = sum(min(3600.0, 5.0 * 3.0 ** (n - 1)) for n in range(1, 8))  # 8 attempts
    assert 5000 < total < 6000  # about an hour and a half


def test_settings_fail_fast_and_build_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXJUDGE_WEBHOOK_ALLOWED_HOSTS", "*.Example.org,hooks.test.com")
    monkeypatch.setenv("JAXJUDGE_WEBHOOK_SECRET", "e" * 40)
    monkeypatch.setenv("JAXJUDGE_WEBHOOK_ALLOW_PRIVATE", "true")
    env = Settings()
    assert env.webhook_allowed_hosts == ["*.example.org", "hooks.test.com"]
    assert env.webhook_secret is not None and env.webhook_secret.get_secret_value() == "e" * 40
    assert CallbackPolicy.from_settings(env).allow_private is True
    monkeypatch.setenv("JAXJUDGE_WEBHOOK_SECRET", "")
    with pytest.raises(ValidationError, match="webhook_secret"):  # hosts but no secret
        Settings()
    for var in ("ALLOWED_HOSTS", "SECRET", "ALLOW_PRIVATE"):
        monkeypatch.delenv(f"JAXJUDGE_WEBHOOK_{var}")
    s = Settings(webhook_allowed_hosts=" Hooks.Example.org, *.lab.example.org ,[::1],",
                 webhook_secret="s" * 32, webhook_allow_http=True)
    assert s.webhook_allowed_hosts == ["hooks.example.org", "*.lab.example.org", "::1"]
    assert (s.webhook_max_attempts, s.webhook_timeout_seconds) == (8, 10.0)
    assert "s" * 32 not in repr(s)
    policy = CallbackPolicy.from_settings(s)
    assert policy == CallbackPolicy(("hooks.example.org", "*.lab.example.org", "::1"),
                                    allow_private=False, allow_http=True)
    assert Settings().webhook_allowed_hosts == [] and Settings().webhook_secret is None
    with pytest.raises(ValidationError, match="webhook_secret"):
        Settings(webhook_allowed_hosts="hooks.example.org")
    short = "é" * 15 + "x"  # 31 bytes in UTF-8, 16 characters
    with pytest.raises(ValidationError, match="at least 32 bytes") as exc:
        Settings(webhook_secret=short)
    assert short not in str(exc.value)
    Settings(webhook_secret="é" * 16)  # 32 bytes: enough
    with pytest.raises(ValidationError, match="allow-list entry"):
        Settings(webhook_allowed_hosts="https://hooks.example.org", webhook_secret="s" * 32)
    with pytest.raises(ValidationError):
        Settings(webhook_timeout_seconds=0)
    with pytest.raises(ValidationError):
        Settings(webhook_max_attempts=0)


def test_the_documented_receiver_snippet_verifies_real_signatures() -> None:
    # The 10 lines receivers copy from docs/http-api.md#webhooks must agree with the server.
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "http-api.md").read_text("utf-8")
    section = page.split("## Webhooks", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "http-api.md#webhooks", "exec"), namespace)
    verify = namespace["verify"]
    body = callback_body(submission_id="s", problem_id="p", mode="submit", status="done",
                         verdict="accepted", score=1.0, max_score=1.0, finished_at=None)
    now = int(time.time())
    header = signature_header(SECRET, now, body)
    assert verify(SECRET, header, body) is True
    assert verify(SECRET, header, body + b" ") is False
    assert verify(b"x" * 32, header, body) is False
    assert verify(SECRET, signature_header(SECRET, now - 301, body), body) is False
    other = signature_header(b"z" * 32, now, body).split("v1=")[1]
    assert verify(SECRET, f"{header}, v1={other}", body) is True
    for bad in ["", "t=,v1=", f"t={now}", header.replace("t=", "t=x"), f"{header},t={now}",
                header + "é"]:
        assert verify(SECRET, bad, body) is False
