"""Red team of the one-off `jaxjudge grade` path (jaxjudge/cli/launch.py,
jaxjudge/isolation/statefile.py, jaxjudge/isolation/layer_cache.py): each attack that worked, as a
real process, beside an honest but unusual case that must keep working. The console script runs with
this checkout first on PYTHONPATH, so the code under test is this tree's, not the installed
one's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_layer_cache import breakable_bwrap, detect  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parent.parent
JAXJUDGE = Path(sys.executable).parent / "jaxjudge"
PROBLEM = "rematerialized-mlp-block"
REFERENCE = ROOT / "problems" / PROBLEM / "reference.py"
OTHER_UID = 65533  # owns what another local user planted (nobody's uid is 65534)
READ = "import sys; from pathlib import Path; from jaxjudge.isolation import statefile\n" \
       "print(statefile.read(Path(sys.argv[1])))"
WRITE = (
    "import os, sys; from pathlib import Path; from jaxjudge.isolation import statefile\n"
    "d = Path(sys.argv[1])\n"
    "os.mkfifo(d / f'.x.json.{os.getpid()}.tmp')  # where a pid-named temporary file would go\n"
    "statefile.write(d / 'x.json', {'a': 1})\n"
    "print(statefile.read(d / 'x.json'))"
)


def reference_after(prelude: str) -> str:
    """The reference solution with `prelude` run first (its __future__ import must lead)."""
    body = REFERENCE.read_text().replace("from __future__ import annotations\n", "")
    return prelude + body


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "JAXJUDGE_STATE_DIR": str(tmp_path / "state")}
    env.pop("PYTHONUNBUFFERED", None)  # as in a user's shell: stdout is block-buffered
    return {**env, **extra}


def python(code: str, *args: str, env: dict[str, str]) -> str:
    """Run `code` in a child; a child that blocks fails the test by its timeout."""
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True,
                          text=True, timeout=60, check=True, cwd=ROOT).stdout.strip()


@pytest.fixture
def world_tmp() -> Iterator[Path]:
    """A folder under /tmp that pool uids can traverse (the layer probes run as one)."""
    folder = Path(tempfile.mkdtemp(prefix="jaxjudge-test-rt-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


# -- the parent's state files ------------------------------------------------------------------

def test_a_fifo_in_place_of_a_state_file_is_refused_without_blocking(tmp_path: Path) -> None:
    # Whoever can write the state folder (the user's own unsandboxed code, e.g. a grade with
    # JAXJUDGE_SANDBOX_DISABLE=bwrap as a non-root user) turned every later grade, serve's
    # XLA-flag lookup included, into a hang: open() of a FIFO waits for a writer.
    env = env_for(tmp_path)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.mkfifo(state / "xla-flags.json", 0o600)
    assert python(READ, str(state / "xla-flags.json"), env=env) == "None"

    os.mkfifo(state / "sandbox-layers.json", 0o600)
    found = detect(env)  # the one-off grade's detection: probed afresh instead
    assert found["cached"] is False
    if found["bwrap"] and found["seccomp"]:  # an all-good answer replaces the FIFO
        assert stat.S_ISREG((state / "sandbox-layers.json").lstat().st_mode)


def test_writing_opens_nothing_planted_at_a_temporary_name(tmp_path: Path) -> None:
    env = env_for(tmp_path)
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    assert python(WRITE, str(state), env=env) == "{'a': 1}"
    assert stat.S_ISREG((state / "x.json").lstat().st_mode)


@pytest.fixture
def root_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("planting files of another uid needs root")


@pytest.mark.parametrize("planted", ["folder_of_another_uid", "folder_writable_by_all",
                                     "symlink_of_another_uid"])
def test_a_state_folder_someone_else_controls_is_not_believed(
        tmp_path: Path, root_only: None, planted: str) -> None:
    env = env_for(tmp_path)
    good = detect(env, cached=False)
    if not (good["bwrap"] and good["seccomp"]):
        pytest.skip("bubblewrap or seccomp unusable here: only all-good answers are kept")
    state = tmp_path / "state"
    entry = json.loads((state / "sandbox-layers.json").read_text())
    entry["planted"] = True  # still a valid entry, but written by someone else
    (state / "sandbox-layers.json").write_text(json.dumps(entry))
    if planted == "folder_of_another_uid":
        os.chown(state, OTHER_UID, OTHER_UID)
    elif planted == "folder_writable_by_all":
        state.chmod(0o777)
    else:
        real = tmp_path / "real-state"
        state.rename(real)
        state.symlink_to(real)
        os.lchown(state, OTHER_UID, OTHER_UID)
    assert detect(env)["cached"] is False
    # ...and nothing is written into it either (its owner could point it anywhere).
    assert json.loads((state / "sandbox-layers.json").read_text()).get("planted") is True


@pytest.mark.parametrize("honest", ["operator_made_0755", "own_symlink"])
def test_an_unusual_but_private_state_folder_is_still_used(tmp_path: Path, honest: str
                                                           ) -> None:
    env = env_for(tmp_path)
    state = tmp_path / "state"
    if honest == "operator_made_0755":
        state.mkdir(mode=0o755)
        state.chmod(0o755)
    else:
        real = tmp_path / "real-state"
        real.mkdir(mode=0o700)
        state.symlink_to(real)
    if not all(detect(env, cached=False)[k] for k in ("bwrap", "seccomp")):
        pytest.skip("bubblewrap or seccomp unusable here: only all-good answers are kept")
    assert detect(env)["cached"] is True


# -- the launcher: threads, signals, output ----------------------------------------------------

def test_a_command_that_ends_first_waits_for_the_layer_probes(tmp_path: Path,
                                                               world_tmp: Path) -> None:
    # os._exit used to cut the background detection short: each `grade --help` or usage error
    # left a jaxjudge-probe-* folder in the temp dir (17 of 18 runs) and stored nothing.
    env = env_for(tmp_path, TMPDIR=str(world_tmp))
    for args in (["--help"], [], ["-p", PROBLEM, "missing.py"]):
        proc = subprocess.run([str(JAXJUDGE), "grade", *args], env=env, capture_output=True,
                              text=True, timeout=120, check=False)
        assert proc.returncode == (0 if args == ["--help"] else 2), proc.stderr
        assert sorted(p.name for p in world_tmp.iterdir()) == []
    found = detect(env)
    if found["bwrap"] and found["seccomp"]:
        assert found["cached"] is True  # the probes ran to the end and were kept


def _default_termination() -> None:
    """In the child: SIGTERM and SIGHUP as a user's shell leaves them. Under `nohup` (or a CI
    runner that ignores SIGHUP) the child inherits SIG_IGN, which the CLI deliberately keeps:
    the grade would run on and end with its verdict's status."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def start_grade(env: dict[str, str], submission: Path, prefix: tuple[str, ...] = ()
                ) -> subprocess.Popen[str]:
    argv = [*prefix, str(JAXJUDGE), "grade", "-p", PROBLEM, str(submission), "--json"]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=_default_termination)


def wait_for_stage_a(work: Path, proc: subprocess.Popen[str]) -> None:
    """Until stage A has its job (the grade is mid-way: both stages are running)."""
    deadline = time.monotonic() + 120
    while not list(work.glob("*/a/job.json")):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)


def leftovers(work: Path, pid: int) -> dict[str, list[str]]:
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    cgroups = [str(p) for depth in range(4) for p in Path("/sys/fs/cgroup").glob(
        "/".join(["*"] * depth + ["jaxjudge", f"run-{pid}-*"]))]
    return {"files": [str(p) for p in work.iterdir()],
            "processes": [line for line in ps.stdout.splitlines() if str(work) in line],
            "cgroups": cgroups}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_grade_terminated_midway_leaves_nothing(tmp_path: Path, sig: signal.Signals) -> None:
    # The default action of SIGTERM/SIGHUP killed the parent at once: its stages died with it,
    # but the work dir (the submission, the jobs) and the run cgroups stayed.
    slow = tmp_path / "slow.py"
    slow.write_text(reference_after("import time\ntime.sleep(60)\n"))
    work = tmp_path / "work"
    work.mkdir()
    proc = start_grade(env_for(tmp_path, JAXJUDGE_WORK_DIR=str(work)), slow)
    wait_for_stage_a(work, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err[-4000:]  # what unwound it otherwise, if it did
    left = leftovers(work, proc.pid)
    assert (left["files"], left["processes"]) == ([], [])
    # A run cgroup stays busy until the kernel is done with its killed members; under load
    # that can outlast the 2 s the grade gives it (seen once in CI). The next grader
    # process's layer detection removes the run cgroups of dead grader processes.
    deadline = time.monotonic() + 60
    while left["cgroups"]:
        assert time.monotonic() < deadline, left
        # (doctor exits 1 where a layer is missing: only its detection's sweep matters here)
        subprocess.run([str(JAXJUDGE), "doctor", "--json"], env=env_for(tmp_path),
                       capture_output=True, timeout=120, check=False)
        left = leftovers(work, proc.pid)


def test_a_grade_under_nohup_ignores_the_hangup(tmp_path: Path) -> None:
    nohup = shutil.which("nohup")
    if nohup is None:
        pytest.skip("no nohup here")
    work = tmp_path / "work"
    work.mkdir()
    proc = start_grade(env_for(tmp_path, JAXJUDGE_WORK_DIR=str(work)), REFERENCE,
                       prefix=(nohup,))
    wait_for_stage_a(work, proc)
    proc.send_signal(signal.SIGHUP)
    out, err = proc.communicate(timeout=300)
    assert (proc.returncode, json.loads(out)["verdict"]) == (0, "accepted"), err
    assert leftovers(work, proc.pid) == {"files": [], "processes": [], "cgroups": []}


def grade_to(env: dict[str, str], submission: Path, **popen: object
             ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(JAXJUDGE), "grade", "-p", PROBLEM, str(submission), "--mode",
                           "run", "--json"], env=env, stderr=subprocess.PIPE, text=True,
                          timeout=300, check=False, **popen)  # type: ignore[call-overload]


def test_a_report_that_cannot_be_written_is_not_a_pass(tmp_path: Path) -> None:
    # os._exit after a flush whose error was suppressed: `grade --json > /dev/full` said 0.
    env = env_for(tmp_path)
    with open("/dev/full", "w") as full:
        proc = grade_to(env, REFERENCE, stdout=full)
    assert proc.returncode == 2
    assert "cannot write the report: No space left on device" in proc.stderr
    read, write = os.pipe()
    os.close(read)  # nobody will read it: a broken pipe
    try:
        proc = grade_to(env, REFERENCE, stdout=write)
    finally:
        os.close(write)
    assert proc.returncode == 2
    assert "cannot write the report: Broken pipe" in proc.stderr


def test_a_large_report_reaches_a_slow_reader_whole(tmp_path: Path) -> None:
    chatty = tmp_path / "chatty.py"
    chatty.write_text(reference_after('print(("x" * 99 + "\\n") * 2500, end="")\n'))
    proc = subprocess.Popen([str(JAXJUDGE), "grade", "-p", PROBLEM, str(chatty), "--mode", "run",
                             "--json"], env=env_for(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    time.sleep(2)  # the report (~265 kB) is larger than the pipe: the writer waits for us
    out, err = proc.communicate(timeout=300)
    report = json.loads(out)
    assert (proc.returncode, report["verdict"], len(report["output"])) == (0, "accepted",
                                                                          250_000), err


def test_a_broken_layer_is_forgotten_even_when_the_report_is_lost(
        tmp_path: Path, breakable_bwrap: tuple[Path, Path]) -> None:  # noqa: F811
    wrapper, broken = breakable_bwrap
    # Unbuffered (as the container sets it): the failing write is the report's own, before
    # the entry used to be forgotten.
    env = env_for(tmp_path, PYTHONUNBUFFERED="1")
    env["PATH"] = f"{wrapper.parent}:{env['PATH']}"
    first = detect(env, cached=False)
    if not (first["bwrap"] == str(wrapper) and first["seccomp"]):
        pytest.skip("the wrapped bubblewrap or seccomp is unusable here")
    stored = tmp_path / "state" / "sandbox-layers.json"
    assert stored.exists()
    broken.touch()
    with open("/dev/full", "w") as full:
        proc = grade_to(env, REFERENCE, stdout=full)
    assert proc.returncode == 2
    assert not stored.exists()  # the next grade probes again
