"""The body-size limit against a real uvicorn server on loopback, with clients that write their
whole body before they read (raw sockets, urllib): each must read the 413 and its message,
not a reset. The app behind the limit is a tiny echo, so no grader starts."""

from __future__ import annotations

import http.client
import json
import socket
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from api_fixtures import REPO, SessionProcess, free_port, service_env
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from jaxjudge.service.main import BodySizeLimit

LIMIT = 1000
DRAIN = 16 * 1024 * 1024
BIG = 8 * 1024 * 1024  # over the limit, under the drain bound, far over any socket buffer


def make_app() -> ASGIApp:
    """The factory the server process runs: an echo of the body's length behind the limit."""
    from starlette.applications import Starlette

    async def echo(request: Request) -> JSONResponse:
        return JSONResponse({"n": len(await request.body())})

    app = Starlette(routes=[Route("/echo", echo, methods=["POST"]),
                            Route("/", lambda _: JSONResponse({}), methods=["GET"])])
    return BodySizeLimit(app, max_bytes=LIMIT, drain_bytes=DRAIN)


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    workdir = tmp_path_factory.mktemp("bodysize")
    port = free_port()
    env = service_env()
    env["PYTHONPATH"] = f"{REPO}:{REPO / 'tests'}"
    cmd = [sys.executable, "-m", "uvicorn", "--factory", f"{Path(__file__).stem}:make_app",
           "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    server = SessionProcess(cmd, env, workdir, workdir / "server.log")

    def up() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return False
        return True

    server.wait_for(up, "server", 60)
    yield port
    server.stop()


def request(body: bytes, *, chunked: bool, extra: bytes = b"") -> bytes:
    """One POST /echo on the wire, its body framed by Content-Length or chunked."""
    head = b"POST /echo HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n" + extra
    if not chunked:
        return head + b"Content-Length: %d\r\n\r\n" % len(body) + body
    pieces = (body[i:i + 65536] for i in range(0, len(body), 65536))
    return head + b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(
        b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


def answer(sock: socket.socket) -> tuple[int, dict[str, str], dict[str, object]]:
    """Read one response (and only that one) from a kept-alive connection."""
    response = http.client.HTTPResponse(sock)
    response.begin()
    headers = {k.lower(): v for k, v in response.getheaders()}
    return response.status, headers, json.loads(response.read())


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_client_that_writes_its_whole_body_reads_the_413(port: int, chunked: bool) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request(b" " * BIG, chunked=chunked))  # all of it before reading
        status, headers, body = answer(sock)
        assert status == 413
        assert body["error"] == "payload_too_large"
        assert f"larger than {LIMIT} bytes" in str(body["message"])
        assert headers.get("connection") != "close"
        # The body was read to its end, so the connection is still in step for the next one.
        sock.sendall(request(b"[]", chunked=chunked))
        assert answer(sock)[0::2] == (200, {"n": 2})


def test_urllib_reads_the_413_and_its_message(port: int) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/echo", data=b" " * BIG,
                                 headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(req, timeout=30)
    assert caught.value.code == 413
    assert json.loads(caught.value.read())["error"] == "payload_too_large"


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_at_the_limit_is_served_and_one_byte_more_is_not(port: int,
                                                                chunked: bool) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request(b" " * LIMIT, chunked=chunked))
        assert answer(sock)[0::2] == (200, {"n": LIMIT})
        sock.sendall(request(b" " * (LIMIT + 1), chunked=chunked))
        assert answer(sock)[0] == 413


def test_past_the_drain_bound_the_413_closes_the_connection(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: test\r\n"
                     b"Content-Length: %d\r\n\r\n" % (DRAIN + 1))
        status, headers, _ = answer(sock)
        assert (status, headers.get("connection")) == (413, "close")
        assert sock.recv(1) == b""


def test_expect_100_continue_is_answered_before_the_body(port: int) -> None:
    """The client has sent nothing yet: no 100 Continue inviting it, the 413 at once."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: test\r\nExpect: 100-continue\r\n"
                     b"Content-Length: %d\r\n\r\n" % (LIMIT + 1))
        raw = b""
        while chunk := sock.recv(65536):  # to the end: the answer closes the connection
            raw += chunk
    assert raw.startswith(b"HTTP/1.1 413 "), raw[:200]
    assert b"\r\nconnection: close\r\n" in raw.lower()
