"""The reference's observed work and the budgets made of it (jaxjudge.grading.reference_work)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jaxjudge import list_problems, load_problem
from jaxjudge.grading import reference_work as rw
from jaxjudge.grading.observing import observe_specs
from jaxjudge.grading.plan import plan_for
from jaxjudge.isolation import statefile

OBSERVED = [p.id for p in list_problems() if any(
    r.rule in ("loop_over_dim", "no_loop_over_dim", "independent_of_dim",
               "rematerialized_activation") for r in load_problem(p.id).requirements)]


def test_a_budget_is_a_multiple_of_the_figure_within_floor_and_total() -> None:
    assert rw.budget(None, 20) == rw.UNPRICED  # no figure: a fixed budget, never a shared pool
    assert rw.budget(100_000, 20) == 2_000_000
    assert rw.budget(100_000, 20.5) == 2_050_000
    assert rw.budget(10, 20) == rw.FLOOR  # a tiny reference run leaves an honest one room
    # no constant per run: only the whole grade's total bounds one (the trusted side's time)
    assert rw.budget(rw.UNPRICED, 10) == 10 * rw.UNPRICED
    assert rw.budget(10**9, 20) == rw.TOTAL


@pytest.mark.parametrize("problem_id", OBSERVED)
@pytest.mark.parametrize("mode", ["submit", "run"])
def test_every_learner_run_has_the_reference_figure_of_its_run(problem_id: str,
                                                               mode: str) -> None:
    """The reference's runs (every=True) hold the key of every run a learner's grade may
    make, whether the learner exports one symbolic program or one per shape, and whichever
    candidate stage B picks: same requirement, same kind of run, same test signature."""
    problem = load_problem(problem_id)
    plan = plan_for(problem, mode)
    sig_of = {t["name"]: t["signature"] for t in plan.tests}
    sigs = {t["signature"] for t in plan.tests}
    ref = observe_specs(problem, plan, {s: s for s in sigs}, every=True)
    assert not any(e.get("candidates") for e in ref)
    have = {rw.entry_key(e, sig_of[e["test"]]): 1000 + i for i, e in enumerate(ref)}
    for program_of in ({s: s for s in sigs}, {s: "poly" for s in sigs}):
        specs = rw.with_budgets(observe_specs(problem, plan, program_of), have, 20.0, sig_of)
        for spec in specs:
            for run in spec.get("candidates") or [spec]:
                assert run["ref_work"] is not None, (spec["id"], run["test"])
                assert run["max_work"] == rw.budget(run["ref_work"], 20.0)


def test_figures_are_kept_atomically_and_a_torn_file_is_a_miss(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAXJUDGE_STATE_DIR", str(tmp_path / "state"))
    key = rw.state_key("p", "fingerprint", "submit")
    assert rw.load(key) is None
    rw.store(key, rw.Reference({"a": 5, "b": 7}, {}, {"req": {"B=1": 4}}))
    assert rw.load(key) == rw.Reference({"a": 5, "b": 7}, {}, {"req": {"B=1": 4}})
    path = statefile.state_dir() / "reference-work" / f"{key}.json"
    path.write_text('{"figures": {"a": 5')  # torn: another process mid-write, by hand
    assert rw.load(key) is None
    path.write_text('{"figures": {"a": -5}}')  # not a figure the parent could have measured
    assert rw.load(key) is None
    assert not [n for n in os.listdir(path.parent) if n.endswith(".tmp")]
    assert rw.state_key("p", "fingerprint", "run") != key


def test_trajectories_are_kept_with_the_figures_and_checked_on_load(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference's answers step by step (its loop's rows, carried values and kicked
    answers; NaN is None) are validated as stage B's results are: a file whose rows disagree
    with their steps, or hold anything but floats, is a miss (measured again), never believed."""
    from jaxjudge.grading.stage_results import TrajectoryLoop

    monkeypatch.setenv("JAXJUDGE_STATE_DIR", str(tmp_path / "state"))
    key = rw.state_key("p", "fingerprint", "submit")
    loop = TrajectoryLoop.model_validate({
        "index": 7, "steps": 2, "rows": [[0.0, 0.0], [1.5, None], [2.5, 3.0]],
        "sizes": [1, 1], "states": [{"step": 1, "slot": 2, "values": [0.5, 1.0]}],
        "kicks": [{"step": 1, "slot": 2, "sign": 1, "row": [2.0, 3.5]}]})
    rw.store(key, rw.Reference({"a": 5}, {"t": loop}, {}))
    assert rw.load(key) == rw.Reference({"a": 5}, {"t": loop}, {})
    path = statefile.state_dir() / "reference-work" / f"{key}.json"
    good = loop.model_dump()
    for bad in ({**good, "rows": [[0.0, 0.0], [1.0, "x"], [1.0, 1.0]]},  # a string
                {**good, "rows": [[0.0, 0.0], [1.0, 1.0]]},  # rows for 2 steps hold 1
                {**good, "kicks": [{"step": 1, "slot": 2, "sign": 3, "row": [1.0]}]},
                [[2.0], [0.0, 0.0], [1.0, 1.0]]):  # the old layout: sizes, then rows
        statefile.write(path, {"figures": {"a": 5}, "trajectories": {"t": bad}})
        assert rw.load(key) is None, bad


def test_rule_figures_are_kept_and_checked_on_load(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule's figures from the reference (`Rule.reference`) travel with its observed work:
    one a parent could not have measured (negative, not an int, under a bad key) is a miss."""
    monkeypatch.setenv("JAXJUDGE_STATE_DIR", str(tmp_path / "state"))
    key = rw.state_key("p", "fingerprint", "submit")
    path = statefile.state_dir() / "reference-work" / f"{key}.json"
    for bad in ({"req": {"B=1": -4}}, {"req": {"B=1": 4.5}}, {"req": [4]}, ["req"]):
        statefile.write(path, {"figures": {"a": 5}, "trajectories": {}, "rules": bad})
        assert rw.load(key) is None, bad
    assert rw.needs_reference(load_problem("pad-and-mask-to-bucket"))
    assert not rw.needs_reference(load_problem("rematerialized-mlp-block"))
