"""Helpers for the HTTP service tests: a real server in a subprocess, a real PostgreSQL.

Plain functions and classes (no fixtures) so each test module declares the fixtures it needs
and nothing leaks into other engineers' test modules.
"""

from __future__ import annotations

import contextlib
import glob
import http.server
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from jaxjudge.service.jobs import QUEUE_NAME

REPO = Path(__file__).resolve().parent.parent
PROBLEM = "rematerialized-mlp-block"
REFERENCE = (REPO / "problems" / PROBLEM / "reference.py").read_text(encoding="utf-8")
BROKEN = "def solve(:\n"  # compile_error, the fastest grade there is
STARTUP_SECONDS = 90.0  # a guard against hanging, not a performance assertion
GRADE_SECONDS = 300.0
WORKER_STARTUP_SECONDS = 60.0  # a guard against hanging, not a performance assertion
# What a `jaxjudge worker` logs once its grading worker (not only its callbacks one) listens.
GRADING_WORKER_STARTED = f"Starting worker on queues {QUEUE_NAME}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def service_env(**settings: Any) -> dict[str, str]:
    """The environment for a server: only our JAXJUDGE_* settings, repo importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXJUDGE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    for key, value in settings.items():
        env[f"JAXJUDGE_{key.upper()}"] = str(value)
    return env


class SessionProcess:
    """A jaxjudge process in its own session, its output in a log file: one signal to the
    session takes it and every sandbox it started, as a crash would."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path, log_path: Path) -> None:
        self.log_path = log_path
        with open(log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log,
                                         stderr=subprocess.STDOUT, start_new_session=True)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_for(self, ready: Callable[[], bool], what: str, seconds: float) -> None:
        """Until `ready()`; RuntimeError with the log if the process exits or time runs out."""
        deadline = time.monotonic() + seconds
        while not ready():
            if not self.alive():
                raise RuntimeError(f"{what}: exited ({self.proc.returncode}):\n{self.log()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"{what}: not within {seconds} s:\n{self.log()}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL the whole session (no shutdown code runs)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(60)

    def stop(self, timeout: float = 30) -> float:
        """A graceful stop (SIGTERM), then SIGKILL what is left of the session; returns the
        seconds the graceful part took."""
        started = time.monotonic()
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout)
        took = time.monotonic() - started
        self.kill()
        return took


class Server(SessionProcess):
    """A jaxjudge server process on loopback, in its own session."""

    def __init__(self, workdir: Path, *, via_cli: bool = False, **settings: Any) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        if via_cli:
            cmd = [sys.executable, "-m", "jaxjudge.cli.service", "serve", "--host", "127.0.0.1",
                   "--port", str(self.port)]
        else:
            settings.setdefault("port", self.port)
            cmd = [sys.executable, "-m", "uvicorn", "--factory", "jaxjudge.service.main:create_app",
                   "--host", "127.0.0.1", "--port", str(self.port), "--log-level", "warning"]
        settings.setdefault("log_level", "warning")
        workdir.mkdir(parents=True, exist_ok=True)
        super().__init__(cmd, service_env(**settings), workdir,
                         workdir / f"server-{self.port}.log")
        self.wait_for(self._healthy, "server", STARTUP_SECONDS)

    def _healthy(self) -> bool:
        with contextlib.suppress(httpx.TransportError):
            return httpx.get(f"{self.base_url}/healthz", timeout=2).status_code == 200
        return False

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=60)


def wait_done(client: httpx.Client, submission_id: str) -> dict[str, Any]:
    """Poll a submission until it is done (bounded so a broken pool fails instead of hangs)."""
    deadline = time.monotonic() + GRADE_SECONDS
    while time.monotonic() < deadline:
        r = client.get(f"/v1/submissions/{submission_id}")
        assert r.status_code == 200, r.text
        body: dict[str, Any] = r.json()
        if body["status"] == "done":
            return body
        time.sleep(0.2)
    raise AssertionError(f"submission {submission_id} not done after {GRADE_SECONDS} s")


def submit(client: httpx.Client, source: str, mode: str = "run", **params: Any) -> httpx.Response:
    return client.post(
        "/v1/submissions",
        json={"problem_id": PROBLEM, "source": source, "mode": mode},
        params=params,
    )


# -- `jaxjudge worker` processes -----------------------------------------------------------------
# Fast heartbeat (0.5 s) and stall timeout (2 s), so redelivery takes seconds; the production
# defaults (2 s, 10 s) only scale those numbers.
FAST = {"worker_heartbeat_seconds": 0.5, "worker_stall_seconds": 2}


class Worker(SessionProcess):
    """A `jaxjudge worker` process in its own session (SIGKILL takes its sandboxes too)."""

    def __init__(self, workdir: Path, database_url: str, name: str, **settings: Any) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        env = service_env(queue="postgres", database_url=database_url,
                          log_level="info", **{"workers": 1, **FAST, **settings})
        super().__init__([sys.executable, "-m", "jaxjudge.cli.service", "worker"], env, workdir,
                         workdir / f"worker-{name}.log")

    def wait_ready(self) -> None:
        self.wait_for(lambda: GRADING_WORKER_STARTED in self.log(), "worker",
                      WORKER_STARTUP_SECONDS)


# -- PostgreSQL --------------------------------------------------------------------------------
def find_pg_bin() -> Path | None:
    """The bin directory of an installed PostgreSQL (Debian layout or initdb on PATH)."""
    for initdb in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True):
        return Path(initdb).parent
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


class PostgresCluster:
    """A throwaway PostgreSQL cluster on a free loopback port that a test can stop and start
    again (a database outage): same data, same port, same URL.

    Raises LookupError when PostgreSQL is not installed (the caller skips)."""

    def __init__(self) -> None:
        bindir = find_pg_bin()
        if bindir is None:
            raise LookupError("PostgreSQL is not installed (apt-get install postgresql)")
        self._bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="jaxjudge-pg-"))
        self._data, self._sock = self.root / "data", self.root / "sock"
        self._sock.mkdir()
        self._as_user: list[str] = []
        if os.geteuid() == 0:  # initdb refuses to run as root
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(self._sock, "postgres", "postgres")
            self._as_user = ["runuser", "-u", "postgres", "--"]
        self.port = free_port()
        self.url = f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"
        self.running = False
        try:
            self._run("initdb", "-D", str(self._data), "-U", "postgres", "--auth=trust",
                      "--encoding=UTF8", "--no-sync")
            self.start()
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run([*self._as_user, str(self._bindir / tool), *args], check=True,
                       capture_output=True, timeout=120)

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self._data), "-l", str(self.root / "log"), "-w",
                  "-t", "60", "-o", f"-p {self.port} -k {self._sock} "
                  "-c listen_addresses=127.0.0.1 -c fsync=off", "start")
        self.running = True

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server: every connection drops and new ones are refused until `start()`
        (`immediate`: as a crash would; `fast`: as an operator's restart would)."""
        self._run("pg_ctl", "-D", str(self._data), "-m", mode, "-w", "stop")
        self.running = False

    def close(self) -> None:
        try:
            if self.running:
                self.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on a free loopback port; yields its SQLAlchemy URL.

    Raises LookupError when PostgreSQL is not installed (the caller skips)."""
    cluster = PostgresCluster()
    try:
        yield cluster.url
    finally:
        cluster.close()


# -- webhook receivers -------------------------------------------------------------------------
Answer = Callable[[http.server.BaseHTTPRequestHandler], None]


def answer_status(code: int, body: bytes = b"", headers: dict[str, str] | None = None) -> Answer:
    def answer(h: http.server.BaseHTTPRequestHandler) -> None:
        h.send_response(code)
        for key, value in (headers or {}).items():
            h.send_header(key, value)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return answer


class Receiver:
    """A real HTTP(S) server on 127.0.0.1 in a thread. Records every request it got (after
    reading its body) and the bytes it managed to send; `answer` writes the response."""

    def __init__(self, answer: Answer, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        self.sent = 0
        self.sni: list[str | None] = []
        self.errors: list[BaseException] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                receiver.requests.append({
                    "path": self.path, "headers": dict(self.headers.items()), "body": body,
                    "peer": self.client_address[0],
                })
                answer(self)

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                receiver.errors.append(sys.exc_info()[1])  # type: ignore[arg-type]

        self.server = Server(("127.0.0.1", 0), Handler)
        if tls is not None:
            tls.sni_callback = lambda _obj, name, _ctx: self.sni.append(name)  # type: ignore
            self.server.socket = tls.wrap_socket(
                self.server.socket, server_side=True, do_handshake_on_connect=False
            )
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    def url(self, host: str = "127.0.0.1", path: str = "/hook", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
