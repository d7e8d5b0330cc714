"""Problem roots (jaxjudge.problems.roots): the folders named by $JAXJUDGE_PROBLEMS_DIR, else the
bundled `problems/` then the folders installed distributions register under the entry-point group
`jaxjudge.problems`. The first root holding an id wins; a broken entry point is skipped."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from jaxjudge import ProblemError, list_problems, load_problem
from jaxjudge.problems import roots
from jaxjudge.service.api.errors import ApiError
from jaxjudge.service.api.routes.problems import get_one, list_all

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "problems" / "ema-with-scan"
BIN = Path(sys.executable).parent
BUNDLED_IDS = sorted(p.parent.name for p in (REPO / "problems").glob("*/problem.toml"))


def copy_problem(root: Path, problem_id: str, title: str) -> Path:
    """ema-with-scan under a new id and title, in `root`."""
    dest = root / problem_id
    shutil.copytree(SOURCE, dest, ignore=shutil.ignore_patterns("submissions", "__pycache__"))
    toml = (dest / "problem.toml").read_text(encoding="utf-8")
    toml = re.sub(r'(?m)^id = ".*"$', f'id = "{problem_id}"', toml)
    toml = re.sub(r'(?m)^title = ".*"$', f'title = "{title}"', toml)
    (dest / "problem.toml").write_text(toml, encoding="utf-8")
    return dest


# -- $JAXJUDGE_PROBLEMS_DIR ---------------------------------------------------------------------
@pytest.fixture
def two_roots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two folders in $JAXJUDGE_PROBLEMS_DIR, both holding `shared-ema`; entry points must not
    be read while it is set."""
    first, second = tmp_path / "first", tmp_path / "second"
    copy_problem(first, "shared-ema", "From First")
    copy_problem(first, "first-ema", "Only First")
    copy_problem(second, "shared-ema", "From Second")
    copy_problem(second, "second-ema", "Only Second")
    monkeypatch.setenv(roots.ENV, f"{first}{os.pathsep}{second}")

    def no_entry_points() -> tuple[Path, ...]:
        raise AssertionError("entry points were read although JAXJUDGE_PROBLEMS_DIR is set")

    monkeypatch.setattr(roots, "entry_point_roots", no_entry_points)
    return first, second


def test_env_folders_in_order_first_wins(two_roots: tuple[Path, Path]) -> None:
    first, second = two_roots
    assert [p.id for p in list_problems()] == ["first-ema", "second-ema", "shared-ema"]
    shared = load_problem("shared-ema")
    assert shared.title == "From First"
    assert shared.root == (first / "shared-ema").resolve()
    assert load_problem("second-ema").root == (second / "second-ema").resolve()
    assert {p.id: p.title for p in list_problems()}["shared-ema"] == "From First"
    assert roots.problems_dir() == first
    assert roots.problem_roots() == [first, second]


def test_env_folders_replace_the_bundled_ones(two_roots: tuple[Path, Path]) -> None:
    assert "ema-with-scan" in BUNDLED_IDS
    with pytest.raises(ProblemError, match="unknown problem 'ema-with-scan'"):
        load_problem("ema-with-scan")
    assert "ema-with-scan" not in {p.id for p in list_problems()}


def test_unknown_and_malformed_ids_are_clean_errors(two_roots: tuple[Path, Path]) -> None:
    first, _ = two_roots
    # A problem.toml one level above the first root: an id never reaches it.
    shutil.copy(first / "first-ema" / "problem.toml", first.parent / "problem.toml")
    with pytest.raises(ProblemError, match=r"unknown problem 'no-such-problem' \(looked in "):
        load_problem("no-such-problem")
    for bad in ("..", ".", "First-Ema", "-x", "a" * 65):
        assert roots.find_problem_dir(bad) is None, bad
        with pytest.raises(ProblemError, match="unknown problem"):
            load_problem(bad)


def test_the_service_lists_and_finds_the_same(two_roots: tuple[Path, Path]) -> None:
    assert [s.id for s in list_all()] == [p.id for p in list_problems()]
    assert get_one("shared-ema").title == "From First"
    with pytest.raises(ApiError) as err:
        get_one("no-such-problem")
    assert err.value.status_code == 404


def test_empty_env_entries_are_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy_problem(tmp_path / "only", "only-ema", "Only")
    monkeypatch.setenv(roots.ENV, f"{os.pathsep}{tmp_path / 'only'}{os.pathsep}")
    assert roots.env_roots() == [tmp_path / "only"]
    assert [p.id for p in list_problems()] == ["only-ema"]


# -- bundled folder, and entry points only when needed ------------------------------------------
def test_a_bundled_id_never_reads_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(roots.ENV, raising=False)
    calls: list[int] = []

    def counted() -> tuple[Path, ...]:
        calls.append(1)
        return ()

    monkeypatch.setattr(roots, "entry_point_roots", counted)
    assert load_problem("ema-with-scan").root == SOURCE.resolve()
    assert calls == []
    with pytest.raises(ProblemError, match="unknown problem 'no-such-problem'"):
        load_problem("no-such-problem")
    assert calls  # an id the bundled folder lacks is looked up in the entry points
    calls.clear()
    assert [p.id for p in list_problems()] == BUNDLED_IDS
    assert calls  # listing reads them too


# -- a real distribution registering problem sets ------------------------------------------------
COURSE_INIT = '''\
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROBLEMS = HERE / "problems"
NOT_A_PATH = 42


def extra_problems():
    return str(HERE / "extra")


def missing_folder():
    return HERE / "no-such-folder"


def raises():
    raise RuntimeError("boom")
'''

COURSE_PYPROJECT = '''\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "jaxjudge-course-demo"
version = "0.1"

[project.entry-points."jaxjudge.problems"]
course = "course_demo:PROBLEMS"
course-extra = "course_demo:extra_problems"
broken-import = "course_demo_nowhere:PROBLEMS"
not-a-path = "course_demo:NOT_A_PATH"
missing-folder = "course_demo:missing_folder"
raises = "course_demo:raises"

[tool.setuptools]
packages = ["course_demo"]

[tool.setuptools.package-data]
course_demo = ["problems/**/*", "extra/**/*"]
'''

BROKEN = ("broken-import", "not-a-path", "missing-folder", "raises")


@pytest.fixture(scope="module")
def course_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`jaxjudge-course-demo` installed with pip into a bare target folder (for PYTHONPATH):
    `course-ema` and a shadowed `ema-with-scan` in its problems/, `course-ema-extra` in extra/,
    and four broken entry points."""
    src = tmp_path_factory.mktemp("course-src")
    pkg = src / "course_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(COURSE_INIT, encoding="utf-8")
    (src / "pyproject.toml").write_text(COURSE_PYPROJECT, encoding="utf-8")
    copy_problem(pkg / "problems", "course-ema", "Course EMA")
    copy_problem(pkg / "problems", "ema-with-scan", "Shadowed EMA")
    copy_problem(pkg / "extra", "course-ema-extra", "Course EMA Extra")
    site = tmp_path_factory.mktemp("course-site")
    done = subprocess.run(
        [str(BIN / "pip"), "install", "--quiet", "--no-deps", "--no-input", "--target", str(site),
         str(src)], capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0 and re.search(r"(?i)no matching distribution|connection|resolve",
                                          done.stderr):
        pytest.skip(f"pip could not fetch the build backend: {done.stderr[-500:]}")
    assert done.returncode == 0, done.stderr[-4000:]
    assert (site / "course_demo" / "problems" / "course-ema" / "tests" / "cases.json").is_file()
    return site


def run_with(site: Path, args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in (roots.ENV, "PYTHONPATH")}
    environ.update(PYTHONPATH=str(site), **env)
    return subprocess.run(args, capture_output=True, text=True, timeout=300, env=environ,
                          cwd=site, check=False)


PROBE = textwrap.dedent('''\
    import json
    import jaxjudge
    from jaxjudge.problems import roots

    out = {}
    out["bundled_root"] = str(jaxjudge.load_problem("ema-with-scan").root)
    out["lookups_after_bundled"] = roots.entry_point_roots.cache_info().currsize
    out["course_root"] = str(jaxjudge.load_problem("course-ema").root)
    out["lookups_after_course"] = roots.entry_point_roots.cache_info().currsize
    out["extra_title"] = jaxjudge.load_problem("course-ema-extra").title
    out["listed"] = [[p.id, p.title] for p in jaxjudge.list_problems()]
    try:
        jaxjudge.load_problem("no-such-problem")
    except jaxjudge.ProblemError as exc:
        out["unknown"] = str(exc)
    print(json.dumps(out))
''')


def test_entry_point_problem_sets_are_found(course_site: Path) -> None:
    done = run_with(course_site, [sys.executable, "-c", PROBE])
    assert done.returncode == 0, done.stderr[-4000:]
    out: dict[str, Any] = json.loads(done.stdout)
    assert out["bundled_root"] == str(SOURCE.resolve())
    assert out["lookups_after_bundled"] == 0  # a bundled id costs no entry-point lookup
    assert out["course_root"] == str(course_site / "course_demo" / "problems" / "course-ema")
    assert out["lookups_after_course"] == 1
    assert out["extra_title"] == "Course EMA Extra"  # a callable entry point returning a str
    listed = dict(out["listed"])
    ids = [row[0] for row in out["listed"]]
    assert ids == sorted(set(BUNDLED_IDS) | {"course-ema", "course-ema-extra"})
    assert listed["ema-with-scan"] == "EMA with a Scan"  # the bundled folder comes first
    assert out["unknown"].startswith("unknown problem 'no-such-problem'")


def test_broken_entry_points_are_skipped_with_a_warning(course_site: Path) -> None:
    done = run_with(course_site, [sys.executable, "-c", PROBE])
    assert done.returncode == 0, done.stderr[-4000:]
    for name in BROKEN:
        warnings = [line for line in done.stderr.splitlines() if f"'{name}'" in line]
        assert len(warnings) == 1, (name, done.stderr)  # once per process: the lookup is cached
        assert "skipping problem set entry point" in warnings[0]
        assert "jaxjudge-course-demo" in warnings[0]
    assert "'course'" not in done.stderr and "'course-extra'" not in done.stderr
    assert "RuntimeError('boom')" in done.stderr
    assert "no-such-folder is not a folder" in done.stderr
    assert "gives a value of type int, not a path" in done.stderr


def test_the_cli_lists_entry_point_problems_once(course_site: Path) -> None:
    done = run_with(course_site, [str(BIN / "jaxjudge"), "problems", "--json"])
    assert done.returncode == 0, done.stderr[-4000:]
    rows = json.loads(done.stdout)
    ids = [row["id"] for row in rows]
    assert ids == sorted(set(BUNDLED_IDS) | {"course-ema", "course-ema-extra"})
    assert {row["id"]: row["title"] for row in rows}["course-ema"] == "Course EMA"
    assert "skipping problem set entry point 'raises'" in done.stderr


def test_env_folders_hide_entry_points(course_site: Path, tmp_path: Path) -> None:
    copy_problem(tmp_path / "mine", "mine-ema", "Mine")
    only_mine = {roots.ENV: str(tmp_path / "mine")}
    probe = textwrap.dedent('''\
        import jaxjudge
        print([p.id for p in jaxjudge.list_problems()])
        jaxjudge.load_problem("course-ema")
    ''')
    done = run_with(course_site, [sys.executable, "-c", probe], **only_mine)
    assert done.returncode == 1
    assert done.stdout.strip() == "['mine-ema']"
    assert "ProblemError: unknown problem 'course-ema'" in done.stderr
    assert "skipping" not in done.stderr  # entry points were never loaded
    listed = run_with(course_site, [str(BIN / "jaxjudge"), "problems", "--json"], **only_mine)
    assert listed.returncode == 0, listed.stderr[-4000:]
    assert [row["id"] for row in json.loads(listed.stdout)] == ["mine-ema"]
