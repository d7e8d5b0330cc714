"""Parsing stage B's texts while it runs (jaxjudge/grading/prefetch.py): what it hands the rules
is the parse of the very text they read, or nothing."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from jaxjudge.analysis.stablehlo import parse_module, parsed_once
from jaxjudge.grading.prefetch import Prefetch

PROGRAM = """"builtin.module"() ({
  "func.func"() <{function_type = (tensor<2xf32>) -> tensor<2xf32>, sym_name = "main"}> ({
  ^bb0(%arg0: tensor<2xf32>):
    %0 = "stablehlo.tanh"(%arg0) : (tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }) : () -> ()
}) : () -> ()
"""


def _write_later(path: Path, text: str, delay: float) -> threading.Thread:
    def write() -> None:
        time.sleep(delay)
        tmp = path.with_name("." + path.name + ".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)

    thread = threading.Thread(target=write)
    thread.start()
    return thread


def test_a_text_written_while_it_waits_is_parsed(tmp_path: Path) -> None:
    prefetch = Prefetch(tmp_path, ["poly.mlir", "poly.profile.mlir"])
    prefetch.start()
    _write_later(tmp_path / "poly.mlir", PROGRAM, 0.05).join()
    deadline = time.monotonic() + 10
    while PROGRAM not in prefetch.parsed and time.monotonic() < deadline:
        time.sleep(0.01)
    parsed = prefetch.stop()
    assert list(parsed) == [PROGRAM]  # the profile copy never came: nothing for it
    assert parsed[PROGRAM].functions()["main"].regions[0][0].ops[0].name == "stablehlo.tanh"
    assert not prefetch.is_alive()


def test_an_unreadable_text_gives_nothing_and_no_error(tmp_path: Path) -> None:
    (tmp_path / "poly.mlir").write_text('"builtin.module"() ({')
    (tmp_path / "other.mlir").mkdir()  # not a regular file
    prefetch = Prefetch(tmp_path, ["poly.mlir", "other.mlir"])
    prefetch.start()
    time.sleep(0.1)
    assert prefetch.stop() == {}


def test_stop_ends_it_at_once_when_nothing_comes(tmp_path: Path) -> None:
    prefetch = Prefetch(tmp_path, ["poly.mlir"])
    prefetch.start()
    started = time.monotonic()
    assert prefetch.stop() == {}
    assert time.monotonic() - started < 1 and not prefetch.is_alive()


def test_the_rules_get_a_prefetched_module_for_the_same_text_only() -> None:
    known = {PROGRAM: parse_module(PROGRAM)}
    other = PROGRAM.replace("tanh", "exponential")
    with parsed_once(known):
        assert parse_module(PROGRAM[:1] + PROGRAM[1:]) is known[PROGRAM]
        assert parse_module(other).functions()["main"].regions[0][0].ops[0].name == (
            "stablehlo.exponential")
    assert parse_module(PROGRAM) is not known[PROGRAM]
