"""The probed XLA flags are kept on disk per jaxlib version, privately, and a planted or
loosened file is not believed (real processes: the probe imports jax in a child)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from jaxjudge.isolation.xla import CANDIDATES

PROBE = "from jaxjudge.isolation.xla import fast_compile_flags, _probe; print(fast_compile_flags())"


def probe(state: Path) -> str:
    env = {**os.environ, "JAXJUDGE_STATE_DIR": str(state)}
    env.pop("JAXJUDGE_XLA_FLAGS", None)
    proc = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    return proc.stdout.strip()


def test_flags_are_probed_once_and_kept_private(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = probe(state)
    assert first in CANDIDATES
    stored = state / "xla-flags.json"
    assert stored.stat().st_mode & 0o777 == 0o600
    assert state.stat().st_mode & 0o777 == 0o700
    assert list(json.loads(stored.read_text()).values()) == [first]
    assert probe(state) == first


def test_a_planted_or_loosened_file_is_not_believed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    good = probe(state)
    stored = state / "xla-flags.json"
    key = next(iter(json.loads(stored.read_text())))
    stored.write_text(json.dumps({key: "--xla_dump_to=/tmp/leak"}))
    assert probe(state) == good  # not a candidate: probed again, and the file repaired
    assert json.loads(stored.read_text())[key] == good
    stored.chmod(0o666)
    stored.write_text(json.dumps({key: CANDIDATES[-1]}))
    assert probe(state) == good  # writable by others: not believed
