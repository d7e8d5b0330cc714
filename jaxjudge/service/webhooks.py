"""Submission callbacks (webhooks): which URLs may be called, what is sent, how it is signed
and how it is delivered.

A callback URL is chosen by the client, so it is untrusted input that makes the judge open a
connection: without care it reaches the judge's own loopback, its LAN or the cloud metadata
service (server-side request forgery). The defences, in order:

- at submit time `check_callback_url` refuses, without DNS (fast), anything but a short
  https URL without credentials or fragment whose host is on the operator's allow-list, and
  IP literals (in every spelling a resolver accepts) that point at non-public addresses;
- at delivery time `deliver` checks the URL again, resolves the host itself within the time
  budget and refuses if ANY address is not public, then connects to the address it checked
  (a second, rebinding DNS answer is never asked for), with the Host header and TLS SNI set to
  the name so the certificate is still verified for the name;
- no redirects, no proxies from the environment, at most 64 KiB of the answer read, and a hard
  deadline on the whole exchange, so a receiver cannot hold a worker.

Everything a receiver controls ends as a `DeliveryResult`; nothing it does raises.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import json
import logging
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from jaxjudge.service.hosts import IPAddress, host_pattern, idna, ip_or_none

if TYPE_CHECKING:
    from jaxjudge.service.config import Settings

log = logging.getLogger(__name__)

EVENT = "submission.graded"
MAX_URL_LENGTH = 2048
MAX_RESPONSE_BYTES = 64 * 1024
RETRY_BASE_SECONDS = 5.0
RETRY_FACTOR = 3.0
RETRY_CAP_SECONDS = 3600.0
MAX_SIGNATURE_HEADER = 1024
_EXCERPT = 200  # characters of a failed answer kept in the error message


def _version() -> str:
    try:
        return metadata.version("jaxjudge")
    except metadata.PackageNotFoundError:  # a source checkout that was never installed
        return "0"


USER_AGENT = f"jaxjudge-webhook/{_version()}"

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_HEX = frozenset("0123456789abcdef")


class CallbackRejected(ValueError):
    """A callback URL this server will not call. The message says why and is safe to show
    the client (it only repeats what the client sent)."""


# -- the policy --------------------------------------------------------------------------------
@dataclass(frozen=True)
class CallbackPolicy:
    """Where callbacks may go. `allowed_hosts` holds exact host names (or IP literals),
    `*.example.org` patterns (any name below example.org, not example.org itself) or `*` (any
    host; the address rules still apply). Empty: every callback is refused."""

    allowed_hosts: tuple[str, ...]
    allow_private: bool = False
    allow_http: bool = False

    def __post_init__(self) -> None:
        # Normalized once, so matching is a plain comparison of normalized names.
        object.__setattr__(
            self, "allowed_hosts", tuple(host_pattern(h) for h in self.allowed_hosts)
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> CallbackPolicy:
        return cls(
            allowed_hosts=tuple(settings.webhook_allowed_hosts),
            allow_private=settings.webhook_allow_private,
            allow_http=settings.webhook_allow_http,
        )

    def allows_host(self, host: str) -> bool:
        """Whether a normalized host (see `check_callback_url`) is on the allow-list."""
        is_ip = ip_or_none(host) is not None
        for pattern in self.allowed_hosts:
            if pattern == "*" or pattern == host:
                return True
            if pattern.startswith("*.") and not is_ip and host.endswith(pattern[1:]):
                return True
        return False


def _looks_ipv4(host: str) -> bool:
    """WHATWG's "ends in a number": browsers and glibc's resolver read such a host as an IPv4
    address in some spelling (2130706433, 0x7f.1, 0177.0.0.1, 127.1)."""
    last = host.rstrip(".").rsplit(".", 1)[-1]
    if last.isascii() and last.isdigit():
        return True
    return last.startswith("0x") and set(last[2:]) <= _HEX


def address_problem(ip: IPAddress, *, allow_private: bool) -> str | None:
    """Why a connection to `ip` is refused ("a loopback address", ...), or None when it is
    allowed. Addresses embedding an IPv4 address (IPv4-mapped, NAT64, 6to4) are judged by it.
    Unspecified, multicast and reserved addresses are refused even with `allow_private`."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.scope_id:
            return "a scoped IPv6 address"
        embedded: ipaddress.IPv4Address | None = ip.ipv4_mapped or ip.sixtofour
        if embedded is None and any(ip in net for net in _NAT64):
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            inner = address_problem(embedded, allow_private=allow_private)
            return None if inner is None else f"{inner} ({embedded}) inside an IPv6 address"
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_loopback:
        return None if allow_private else "a loopback address"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_link_local:
        return None if allow_private else "a link-local address"
    if ip in _CGNAT:
        return None if allow_private else "a shared (carrier-grade NAT) address"
    if isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local:  # fec0::/10, "global"
        return None if allow_private else "a site-local address"
    if ip.is_private:
        return None if allow_private else "a private address"
    if not ip.is_global:
        return None if allow_private else "a non-public address"
    return None


# -- submit-time check -------------------------------------------------------------------------
@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str  # normalized: punycode, lower case, no trailing dot; IPv6 without brackets
    port: int
    explicit_port: bool
    path: str  # path and query, ASCII
    ip: IPAddress | None  # the host is an IP literal

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}" if self.explicit_port else host

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.path}"


def _parse(url: str, policy: CallbackPolicy) -> _Target:
    if not isinstance(url, str):
        raise CallbackRejected("callback_url must be a string")
    if not policy.allowed_hosts:
        raise CallbackRejected("callbacks are not enabled on this server")
    if len(url) > MAX_URL_LENGTH:
        raise CallbackRejected(f"callback_url is longer than {MAX_URL_LENGTH} characters")
    if any(c.isspace() or not c.isprintable() or c == "\\" for c in url):
        # Parsers disagree about these (WHATWG reads "\" as "/"): refuse rather than guess.
        raise CallbackRejected("callback_url contains whitespace, a control character or '\\'")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise CallbackRejected(f"callback_url is not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise CallbackRejected("callback_url must be an https:// URL")
    if scheme == "http" and not policy.allow_http:
        raise CallbackRejected("callback_url must use https:// (plain http is off on this server)")
    if "@" in parts.netloc:
        raise CallbackRejected("callback_url must not contain a user name or password")
    if "#" in url:
        raise CallbackRejected("callback_url must not contain a fragment ('#')")
    if port == 0:
        raise CallbackRejected("callback_url has port 0")
    raw_host = parts.hostname or ""
    if not raw_host:
        raise CallbackRejected("callback_url has no host")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not path.isascii():
        raise CallbackRejected("callback_url: percent-encode non-ASCII characters in the path")

    ip: IPAddress | None
    if parts.netloc.startswith("["):
        ip = ip_or_none(raw_host)
        if not isinstance(ip, ipaddress.IPv6Address) or "%" in raw_host:
            raise CallbackRejected(f"callback_url host [{raw_host}] is not an IPv6 address")
        host = str(ip)
    else:
        try:
            host = idna(raw_host)
        except ValueError as exc:
            raise CallbackRejected(f"callback_url host: {exc}") from None
        ip = None
        if _looks_ipv4(host):
            try:
                ip = ipaddress.IPv4Address(host)  # only the canonical a.b.c.d spelling
            except ValueError:
                raise CallbackRejected(
                    f"callback_url host {host!r} is an IPv4 address in a non-standard "
                    "spelling; write it as four decimal numbers a.b.c.d"
                ) from None
    if ip is not None:
        problem = address_problem(ip, allow_private=policy.allow_private)
        if problem:
            raise CallbackRejected(
                f"callback_url points to {ip}, {problem}; callbacks go to public addresses"
            )
    elif (host == "localhost" or host.endswith(".localhost")) and not policy.allow_private:
        raise CallbackRejected(f"callback_url host {host!r} is a loopback name")
    if not policy.allows_host(host):
        raise CallbackRejected(f"callback_url host {host!r} is not on this server's allow-list")
    default_port = 443 if scheme == "https" else 80
    target = _Target(scheme, host, port or default_port,
                     port is not None and port != default_port, path, ip)
    if len(target.url) > MAX_URL_LENGTH:  # punycode can make a host longer than it was typed
        raise CallbackRejected(
            f"callback_url is longer than {MAX_URL_LENGTH} characters once normalized")
    return target


def check_callback_url(url: str, policy: CallbackPolicy) -> str:
    """The submit-time check (no DNS): length, scheme, no credentials or fragment, host on the
    allow-list, IP literals public. Returns the normalized URL; CallbackRejected otherwise."""
    return _parse(url, policy).url


# -- the payload and its signature -------------------------------------------------------------
def _timestamp(value: datetime | str | None) -> str | None:
    if not isinstance(value, datetime):
        return value
    if value.tzinfo is None:  # SQLite hands back naive datetimes; the store writes UTC
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def callback_body(
    *,
    submission_id: str,
    problem_id: str,
    mode: str,
    status: str,
    verdict: str | None,
    score: float | None,
    max_score: float | None,
    finished_at: datetime | str | None,
) -> bytes:
    """The JSON a receiver gets (compact, ASCII). The same bytes go out on every attempt; the
    signature's timestamp is what changes."""
    payload = {
        "event": EVENT,
        "submission_id": submission_id,
        "problem_id": problem_id,
        "mode": mode,
        "status": status,
        "verdict": verdict,
        "score": score,
        "max_score": max_score,
        "finished_at": _timestamp(finished_at),
    }
    return json.dumps(payload, separators=(",", ":"), allow_nan=False).encode("ascii")


def _mac(secret: bytes, timestamp: int, body: bytes) -> str:
    return hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def signature_header(secret: bytes, timestamp: int, body: bytes) -> str:
    """`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body>`: the timestamp is signed too,
    so an old delivery cannot be replayed with a fresh one."""
    return f"t={timestamp},v1={_mac(secret, timestamp, body)}"


def verify_signature(
    secret: bytes, header: str, body: bytes, *, tolerance: int = 300, now: int | None = None
) -> bool:
    """For receivers: True when `header` signs exactly `body` with `secret` and its timestamp
    is within `tolerance` seconds of `now`. Several `v1=` entries are allowed (any may match);
    unknown keys are ignored; anything malformed is False, never an exception."""
    if not isinstance(header, str) or len(header) > MAX_SIGNATURE_HEADER:
        return False
    timestamp: int | None = None
    candidates: list[bytes] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            return False
        if key == "t":
            if timestamp is not None or not (value.isascii() and value.isdigit()):
                return False
            if len(value) > 12:
                return False
            timestamp = int(value)
        elif key == "v1" and value.isascii():
            candidates.append(value.encode("ascii"))
    if timestamp is None or not candidates:
        return False
    if abs((int(time.time()) if now is None else now) - timestamp) > tolerance:
        return False
    expected = _mac(secret, timestamp, body).encode("ascii")
    matched = False
    for candidate in candidates:  # no early exit: the time taken says nothing
        matched |= hmac.compare_digest(expected, candidate)
    return matched


def retry_delay(attempt: int, base: float = RETRY_BASE_SECONDS) -> float:
    """Seconds to wait after failed attempt number `attempt` (1 = the first delivery):
    `base` (5 s) × 3^(attempt−1), capped at one hour, then scaled by a random 0.8–1.0 so
    receivers that come back after an outage are not hit by every pending delivery at once.
    With 8 attempts the retries span about 1.5 hours."""
    n = min(max(1, attempt), 32)
    delay = min(RETRY_CAP_SECONDS, base * RETRY_FACTOR ** (n - 1))
    return delay * random.uniform(0.8, 1.0)


# -- delivery ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class DeliveryResult:
    """How one attempt went. `retryable`: worth another attempt later (timeouts, connection
    errors, 408/429/5xx); refusals by the policy, redirects and other 4xx are not."""

    ok: bool
    status_code: int | None
    error: str | None
    retryable: bool


def _fail(error: str, *, retryable: bool, status_code: int | None = None) -> DeliveryResult:
    return DeliveryResult(ok=False, status_code=status_code, error=error, retryable=retryable)


def _clip(text: object, limit: int = 300) -> str:
    s = "".join(c if c.isprintable() else " " for c in str(text))
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _resolve(host: str, port: int, timeout: float) -> list[IPAddress]:
    """getaddrinfo in a daemon thread, abandoned after `timeout`: the C resolver has no
    deadline of its own. Raises TimeoutError or OSError (socket.gaierror)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except BaseException as exc:
            box["error"] = exc

    worker = threading.Thread(target=run, name="webhook-dns", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"resolving {host} took longer than {timeout:.3g} s")
    if "error" in box:
        raise box["error"]
    found: list[IPAddress] = []
    for family, _, _, _, sockaddr in box["infos"]:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        addr = ipaddress.ip_address(sockaddr[0])  # a scope ("%eth0") is kept in scope_id
        if isinstance(addr, ipaddress.IPv6Address) and len(sockaddr) >= 4 and sockaddr[3]:
            addr = ipaddress.IPv6Address(f"{addr}%{sockaddr[3]}")
        if addr not in found:
            found.append(addr)
    if not found:
        raise OSError(f"{host} has no IPv4 or IPv6 address")
    return found


class _Deadline:
    """Shuts the connection down when the time is up. httpx's timeouts bound each read, not
    the exchange: a receiver trickling a byte a second would hold the worker for ever. The
    trace hook hands us each new socket; we keep a duplicate of its descriptor (shutdown acts
    on the connection, and our duplicate cannot be closed and reused under us)."""

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._done = False
        self.fired = False
        self._timer = threading.Timer(max(0.0, seconds), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def trace(self, event: str, info: dict[str, Any]) -> None:
        if event != "connection.connect_tcp.complete":
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        dup = sock.dup()
        with self._lock:
            if not self._done:
                self._socks.append(dup)
                if self.fired:
                    _shutdown(dup)
                return
        dup.close()

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            for sock in self._socks:
                _shutdown(sock)

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._done = True
            socks, self._socks = self._socks, []
        for sock in socks:
            sock.close()


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the other side
        sock.shutdown(socket.SHUT_RDWR)


def _ssl_error(exc: BaseException) -> ssl.SSLError | None:
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        if isinstance(cur, ssl.SSLError):
            return cur
        seen.add(id(cur))
        cur = cur.__cause__ or cur.__context__
    return None


def _post(
    client: httpx.Client,
    target: _Target,
    address: IPAddress,
    body: bytes,
    headers: dict[str, str],
    trace: Callable[[str, dict[str, Any]], None],
) -> DeliveryResult:
    """One POST to `address`, answered or not; httpx errors propagate to the caller."""
    url = httpx.URL(target.url).copy_with(host=str(address))
    extensions: dict[str, Any] = {"trace": trace}
    if target.ip is None:
        extensions["sni_hostname"] = target.host  # certificate checked against the name
    with client.stream("POST", url, content=body, headers=headers,
                       extensions=extensions) as response:
        received = 0
        head = b""
        for chunk in response.iter_raw():  # raw: a compressed bomb is never inflated
            received += len(chunk)
            if len(head) < _EXCERPT:
                head += chunk[: _EXCERPT - len(head)]
            if received >= MAX_RESPONSE_BYTES:
                break
        code = response.status_code
    if 200 <= code < 300:
        return DeliveryResult(ok=True, status_code=code, error=None, retryable=False)
    said = _clip(head.decode("utf-8", "replace").strip(), _EXCERPT)
    detail = f"receiver answered HTTP {code}" + (f": {said}" if said else "")
    if 300 <= code < 400:
        return _fail(f"{detail} (redirects are not followed)", retryable=False, status_code=code)
    retryable = code in (408, 429) or 500 <= code < 600
    return _fail(detail, retryable=retryable, status_code=code)


def deliver(
    url: str,
    body: bytes,
    *,
    secret: bytes,
    policy: CallbackPolicy,
    delivery_id: str,
    timeout: float = 10.0,
    transport: httpx.BaseTransport | None = None,
) -> DeliveryResult:
    """POST `body` to `url`, signed. The URL is checked again (the policy may have changed
    since submit), the host resolved here and every address vetted, then the request goes to
    the vetted address (Host header and SNI carry the name). `timeout` bounds the whole
    attempt: resolution, connection, TLS, request and answer. A given `transport` (tests, a
    custom TLS trust store) is used as is and not closed; each attempt asks for
    `Connection: close`, so no connection is shared between names. Never raises for anything
    the receiver or its DNS does."""
    if not (delivery_id.isascii() and delivery_id.isprintable() and 0 < len(delivery_id) <= 200):
        raise ValueError("delivery_id must be 1-200 printable ASCII characters")
    started = time.monotonic()
    try:
        target = _parse(url, policy)
    except CallbackRejected as exc:
        return _fail(str(exc), retryable=False)

    if target.ip is not None:
        addresses: list[IPAddress] = [target.ip]
    else:
        try:
            addresses = _resolve(target.host, target.port, timeout)
        except TimeoutError as exc:
            return _fail(f"could not resolve {target.host}: {exc}", retryable=True)
        except (OSError, UnicodeError, ValueError) as exc:
            return _fail(f"could not resolve {target.host}: {_clip(exc)}", retryable=True)
    for address in addresses:
        problem = address_problem(address, allow_private=policy.allow_private)
        if problem:
            return _fail(
                f"callback host {target.host} resolves to {problem}; callbacks go to public "
                "addresses only",
                retryable=False,
            )

    remaining = timeout - (time.monotonic() - started)
    if remaining <= 0:
        return _fail(f"timed out after {timeout:g} s (resolving {target.host})", retryable=True)
    headers = {
        "Host": target.netloc,
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Accept-Encoding": "identity",
        "Connection": "close",
        "X-Jaxjudge-Event": EVENT,
        "X-Jaxjudge-Delivery": delivery_id,
        "X-Jaxjudge-Signature": signature_header(secret, int(time.time()), body),
    }
    own_transport = transport is None
    client = httpx.Client(
        transport=transport or httpx.HTTPTransport(retries=0),
        follow_redirects=False,
        trust_env=False,  # an HTTP(S)_PROXY would connect by name, after our check
        timeout=httpx.Timeout(remaining),
    )
    deadline = _Deadline(remaining)
    result = _fail("no address to connect to", retryable=True)
    try:
        for address in addresses:
            try:
                return _post(client, target, address, body, headers, deadline.trace)
            except httpx.ConnectError as exc:
                if deadline.fired:
                    break
                bad_tls = _ssl_error(exc)
                if isinstance(bad_tls, ssl.SSLCertVerificationError):
                    reason = bad_tls.verify_message or str(bad_tls)
                    return _fail(
                        f"TLS certificate of {target.host} not accepted: {_clip(reason)}",
                        retryable=True,
                    )
                result = _fail(f"could not connect to {target.netloc} ({address}): "
                               f"{_clip(exc)}", retryable=True)
                continue  # the next address of the name
            except httpx.TimeoutException:
                break
            except (httpx.HTTPError, OSError, ssl.SSLError) as exc:
                if deadline.fired:
                    break
                return _fail(f"connection to {target.netloc} failed: {_clip(exc) or type(exc)}",
                             retryable=True)
        if deadline.fired or time.monotonic() - started >= timeout:
            return _fail(f"timed out after {timeout:g} s", retryable=True)
        return result
    except Exception as exc:  # a receiver must never crash the caller's worker
        log.exception("webhook delivery %s to %s failed unexpectedly", delivery_id, target.host)
        return _fail(f"delivery failed: {type(exc).__name__}: {_clip(exc)}", retryable=False)
    finally:
        deadline.close()
        if own_transport:
            client.close()
