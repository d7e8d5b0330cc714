"""The `jaxjudge` command: JSON contract and exit statuses, run as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jaxjudge import list_problems

ROOT = Path(__file__).resolve().parent.parent
JAXJUDGE = Path(sys.executable).parent / "jaxjudge"
REFERENCE = ROOT / "problems" / "rematerialized-mlp-block" / "reference.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(JAXJUDGE), *args], capture_output=True, text=True, timeout=300, check=False
    )


def test_grade_json_accepted_exit_0() -> None:
    proc = run(
        "grade", "--problem", "rematerialized-mlp-block", str(REFERENCE), "--mode", "run", "--json"
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)  # exactly one JSON object
    for key in ("verdict", "problem", "mode", "summary", "tests", "requirements", "timings"):
        assert key in report
    assert report["verdict"] == "accepted" and report["mode"] == "run"
    assert {"name", "visible", "verdict", "message"} <= set(report["tests"][0])
    assert {"name", "passed", "message"} <= set(report["requirements"][0])
    # The submission's line the decided-on ops came from: the reference's tanh.
    tanh_line = _line_of(REFERENCE, "jnp.tanh(")
    by_name = {r["name"]: r for r in report["requirements"]}
    evidence = by_name["tanh-rematerialized"]["evidence"]
    assert evidence["source_file"] == "reference.py"
    assert evidence["source_lines"] == [tanh_line]


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def test_grade_text_names_the_source_line(tmp_path: Path) -> None:
    solution = tmp_path / "solution.py"
    solution.write_text("# my attempt\n\n" + REFERENCE.read_text(encoding="utf-8"))
    proc = run("grade", "-p", "rematerialized-mlp-block", str(solution), "--mode", "run")
    assert proc.returncode == 0, proc.stderr
    assert f"solution.py:{_line_of(solution, 'jnp.tanh(')}" in proc.stdout


def test_grade_non_accepted_exit_1_and_human_output(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("def solve(:\n")
    proc = run("grade", "-p", "rematerialized-mlp-block", str(bad), "--mode", "run")
    assert proc.returncode == 1
    assert "compile_error" in proc.stdout


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run("grade", "-p", "no-such-problem", str(REFERENCE)).returncode == 2
    assert (
        run("grade", "-p", "rematerialized-mlp-block", str(REFERENCE), "--mode", "x").returncode
        == 2
    )
    assert (
        run("grade", "-p", "rematerialized-mlp-block", str(tmp_path / "missing.py")).returncode == 2
    )
    assert run("grade").returncode == 2


def test_problems_and_show() -> None:
    proc = run("problems", "--json")
    assert proc.returncode == 0
    assert any(p["id"] == "rematerialized-mlp-block" for p in json.loads(proc.stdout))
    show = run("show", "rematerialized-mlp-block")
    assert show.returncode == 0 and "checkpoint" in show.stdout
    starter = run("show", "rematerialized-mlp-block", "--starter")
    assert "def solve" in starter.stdout
    compile(starter.stdout, "starter.py", "exec")


@pytest.mark.parametrize("columns", ["40", "80", "200"])
def test_problems_never_cuts_an_id(columns: str) -> None:
    """Each id appears whole on one line (it is copied into `-p`), at any terminal width."""
    ids = [p.id for p in list_problems()]
    proc = subprocess.run([str(JAXJUDGE), "problems"], capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, "COLUMNS": columns})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for pid in ids:
        assert any(pid in line for line in lines), (pid, proc.stdout)


def _doctor(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(JAXJUDGE), "doctor", *args], capture_output=True, text=True,
                          timeout=300, check=False, env={**os.environ, **env})


def test_doctor_reports_layers_and_the_warm_pool() -> None:
    proc = _doctor("--json", JAXJUDGE_SANDBOX_DISABLE="")
    report = json.loads(proc.stdout)
    warm = report.pop("warm_pool")
    assert report and all("active" in v for v in report.values())
    # 0 exactly when every layer is active (scripts and health checks read it).
    assert proc.returncode == (0 if all(v["active"] for v in report.values()) else 1), proc
    assert {"active", "detail", "pid_namespaces", "nspid", "root", "user_namespaces",
            "cgroups"} <= set(warm)
    assert warm["pid_namespaces"] == report["bwrap"]["active"]
    assert warm["cgroups"] == report["cgroup"]["active"]
    assert warm["detail"].startswith("yes: " if warm["active"] else "no: ")


def test_doctor_exits_1_when_a_layer_is_missing() -> None:
    """Without bwrap there is no pid namespace: the warm pool still runs, finding its
    children by pid, and doctor says so; the missing layers make the exit status 1."""
    missing = {"JAXJUDGE_SANDBOX_DISABLE": "bwrap,cgroup"}
    proc = _doctor("--json", **missing)
    assert proc.returncode == 1, proc
    report = json.loads(proc.stdout)
    assert not report["bwrap"]["active"] and not report["cgroup"]["active"]
    warm = report["warm_pool"]
    assert warm["pid_namespaces"] is False and warm["cgroups"] is False
    if warm["active"]:
        assert "found by their pid" in warm["detail"] and "killed by pid" in warm["detail"]
    text = _doctor(**missing)
    assert text.returncode == 1
    assert "missing sandbox layers: cgroup, bwrap" in text.stderr
    assert "warm pool:" in text.stdout
    # Accepting the risk lets grading go ahead; it does not make a layer active.
    assert _doctor("--json", JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX="1", **missing).returncode == 1


def test_doctor_help_states_its_exit_status() -> None:
    proc = _doctor("--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "0 when every sandbox layer is active, 1 when any is missing" in text


LAZY_MODULES = ("jaxjudge.cli.batch", "jaxjudge.cli.authoring", "jaxjudge.cli.remote")


def _registered_after(argv: list[str]) -> dict[str, object]:
    """Which lazy command modules a fresh interpreter imports for `argv`, and the commands the
    CLI then knows."""
    code = (
        "import json, sys\n"
        "from jaxjudge.cli.service import cli, register_commands\n"
        f"register_commands({argv!r})\n"
        f"print(json.dumps({{'modules': [m for m in {LAZY_MODULES!r} if m in sys.modules],"
        " 'commands': [c.name for c in cli.registered_commands]}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(proc.stdout)


def test_grade_imports_no_other_command_module() -> None:
    got = _registered_after(["grade", "-p", "x", "f.py"])
    assert got["modules"] == []
    assert "grade" in got["commands"] and "serve" in got["commands"]


def test_lazy_command_imports_only_its_module() -> None:
    got = _registered_after(["gradescope", "--help"])
    assert got["modules"] == ["jaxjudge.cli.batch"]
    assert {"grade-set", "gradescope"} <= set(got["commands"])  # type: ignore[arg-type]
    assert "submit" not in got["commands"]  # type: ignore[operator]


def test_help_and_typos_see_every_command() -> None:
    proc = run("--help")
    assert proc.returncode == 0
    for name in ("grade", "serve", "submit", "gradescope", "grade-set", "check-problem",
                 "new-problem", "rules", "migrate"):
        assert name in proc.stdout, name
    typo = run("gradescop")
    assert typo.returncode == 2 and "gradescope" in typo.stderr


def test_rules_prints_one_rules_semantics() -> None:
    proc = run("rules", "independent_of_dim")
    assert proc.returncode == 0, proc.stderr
    assert "probe" in proc.stdout and "dim (required)" in proc.stdout
    unknown = run("rules", "no_such_rule")
    assert unknown.returncode == 2 and "known rules" in unknown.stderr
