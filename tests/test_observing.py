"""Which runs stage B is asked to observe (jaxjudge.grading.observing)."""

from __future__ import annotations

from jaxjudge import load_problem
from jaxjudge.grading.observing import _groups, observations, observe_specs
from jaxjudge.grading.plan import plan_for
from jaxjudge.grading.stage_results import ObservedResult


def test_every_program_the_tests_run_is_observed_most_steps_first() -> None:
    """A program honest at the most-steps shape and idle elsewhere is seen where it idles:
    one run per signature whose loop takes 2 to 48 steps, the first one primary."""
    problem = load_problem("ema-with-scan")
    plan = plan_for(problem, "submit")
    program_of = {sid: sid for sid in {t["signature"] for t in plan.tests}}
    every = observe_specs(problem, plan, program_of)
    specs = [s for s in every if not s.get("candidates") and s.get("kind") != "trajectory"]
    wanted = {sid for sid in program_of if 2 <= plan.sig_dims[sid]["T"] <= 48}
    assert {s["program"] for s in specs} == wanted and len(specs) == len(wanted)
    # and the loop stopped after each step (jaxjudge.analysis.trajectory): the first tests of
    # the same signatures at every step, then every other test at a few steps
    paths = [s for s in every if s.get("kind") == "trajectory"]
    assert [(s["program"], s["test"], s["count"]) for s in paths[:len(specs)]] == [
        (s["program"], s["test"], s["count"]) for s in specs]
    assert not any("at" in s for s in paths[:len(specs)])
    looped = [t["name"] for t in plan.tests if 2 <= plan.sig_dims[t["signature"]]["T"] <= 48]
    assert sorted(s["test"] for s in paths) == sorted(looped)
    assert all(s["at"][0] == 0 and s["at"][-1] == s["count"] for s in paths[len(specs):])
    assert [s["primary"] for s in specs] == [True] + [False] * (len(specs) - 1)
    assert specs[0]["count"] == max(s["count"] for s in specs)
    assert all(len(s["groups"]) == 1 and s["groups"][0]["size"] == 1 for s in specs)


def test_the_reference_follows_every_test_at_every_step() -> None:
    """Its answers step by step are what each learner's run is compared with, whichever steps
    that run stops after; each test has a figure key of its own."""
    from jaxjudge.grading.reference_work import entry_key

    problem = load_problem("ema-with-scan")
    plan = plan_for(problem, "submit")
    program_of = {sid: sid for sid in {t["signature"] for t in plan.tests}}
    sig_of = {t["name"]: t["signature"] for t in plan.tests}
    mine = [s for s in observe_specs(problem, plan, program_of)
            if s.get("kind") == "trajectory"]
    ref = [s for s in observe_specs(problem, plan, program_of, every=True)
           if s.get("kind") == "trajectory"]
    assert not any("at" in s for s in ref)
    keys = {entry_key(s, sig_of[s["test"]]) for s in ref}
    assert len(keys) == len(ref) and {entry_key(s, sig_of[s["test"]]) for s in mine} == keys


def test_a_learners_own_input_is_not_followed_step_by_step() -> None:
    """The reference's answers step by step were measured on the problem's tests, so a custom
    input (issue 25's run mode) has none to compare with: it is not followed (it was, and the
    requirement failed closed as a package error)."""
    from jaxjudge.problems.package import TestCase

    problem = load_problem("ema-with-scan")
    extra = [TestCase(name="custom-1", visible=True, expected=None,
                      inputs={"x": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
                              "alpha": 0.5})]
    plan = plan_for(problem, "run", extra)
    assert plan.custom == {"custom-1"}
    program_of = {sid: sid for sid in {t["signature"] for t in plan.tests}}
    followed = [s["test"] for s in observe_specs(problem, plan, program_of)
                if s.get("kind") == "trajectory"]
    assert followed and "custom-1" not in followed


def test_a_second_test_of_each_signature_is_offered_for_stage_b_to_pick() -> None:
    """Beside each first run, one run on another test of its signature, which stage B picks
    among the candidates (by the verified program's hash): never primary, the first run's
    program, every other test of the signature offered."""
    problem = load_problem("ema-with-scan")
    plan = plan_for(problem, "submit")
    program_of = {sid: sid for sid in {t["signature"] for t in plan.tests}}
    names: dict[str, list[str]] = {}
    for t in plan.tests:
        names.setdefault(t["signature"], []).append(t["name"])
    specs = observe_specs(problem, plan, program_of)
    seconds = [s for s in specs if s.get("candidates")]
    assert seconds and not any(s["primary"] for s in seconds)
    with_more = {sid for sid in program_of if len(names[sid]) > 1
                 and 2 <= plan.sig_dims[sid]["T"] <= 48}
    assert {s["program"] for s in seconds} == with_more
    for s in seconds:
        offered = [c["test"] for c in s["candidates"]]
        assert sorted(offered) == sorted(names[s["program"]][1:])
        assert {c["program"] for c in s["candidates"]} == {s["program"]}
    assert len({s["id"] for s in specs}) == len(specs)

def test_independent_of_dim_is_watched_one_index_at_a_time() -> None:
    problem = load_problem("per-example-gradient-clipping")
    plan = plan_for(problem, "submit")
    program_of = {sid: "p" for sid in {t["signature"] for t in plan.tests}}  # one symbolic
    specs = observe_specs(problem, plan, program_of)
    assert specs and all(s["dim"] == "B" and s["own"] for s in specs)
    assert max(s["count"] for s in specs) == 8


def test_no_loop_dims_are_watched_on_every_signature() -> None:
    """Per input on the largest size, then every input together on one test of each other
    signature that has at least two indices: a loop keyed to one (N, M) pair is seen there."""
    problem = load_problem("pairwise-distances-nested-vmap")
    plan = plan_for(problem, "submit")
    program_of = {sid: sid for sid in {t["signature"] for t in plan.tests}}
    specs = [s for s in observe_specs(problem, plan, program_of)
             if s["dim"] == "N" and not s.get("candidates")]
    sizes = {sid: plan.sig_dims[sid]["N"] for sid in program_of}
    wanted = {sid for sid, n in sizes.items() if n >= 2}
    assert {s["program"] for s in specs} == wanted
    largest = max(sizes.values())
    assert specs[0]["watch"] == ["x"] and specs[0]["count"] == largest  # y has M rows, not N
    assert [s["count"] for s in specs] == sorted((s["count"] for s in specs), reverse=True)


def test_no_planned_run_is_skipped() -> None:
    """Every planned run of the program is judged: one stage B did not report, or reported
    over its budget (primary or not), fails its requirement, the reference's figure in the
    message; there is no status that drops a run."""
    specs = [{"id": "r0", "program": "p", "test": "t0", "count": 4, "sliced": [],
              "primary": True, "max_work": 2_000_000, "ref_work": 100_000, "multiple": 20.0},
             {"id": "r1", "program": "p", "test": "t1", "count": 3, "sliced": [],
              "primary": False, "max_work": 4_000_000, "ref_work": 100_000,
              "multiple": 20.0}]
    over = ObservedResult(status="over_budget", reason="more than 4,000,000 element operations",
                          work=4_000_000)
    got = observations({"r1": over}, specs, "p")
    assert [o.status for o in got] == ["error", "over_budget"]
    assert "no run" in got[0].reason
    assert "40x the observed work of the reference" in got[1].reason
    assert "allows 20x" in got[1].reason
    total = ObservedResult(status="over_budget", reason="the grade's total is spent", work=0)
    assert "together" in observations({"r1": total}, specs, "p")[1].reason
    assert [o.status for o in observations(None, specs, "p")] == ["error", "error"]
    assert observations(None, [], "p") == ()


def test_sliced_inputs_are_watched_only_where_every_share_is_whole() -> None:
    """The idle-step check (analysis/observed._idle_steps) compares steps' arithmetic: a ragged
    last share would look idle, so a size the trip count does not divide is not observed."""
    problem = load_problem("blockwise-attention-online-softmax")
    got = _groups(problem, ("k", "v"), "T", {"T": 16}, 4)
    assert got is not None and [g["size"] for g in got] == [4, 4]
    assert _groups(problem, ("k", "v"), "T", {"T": 18}, 4) is None



def test_the_recomputed_activation_is_watched_on_a_second_program_too() -> None:
    """The tanh observer runs on the first test and on a test of one other program, which
    stage B picks: a program honest at the first test's shape only (a red-team round) is seen.
    One symbolic program gets one run."""
    problem = load_problem("rematerialized-mlp-block")
    plan = plan_for(problem, "submit")
    program_of = {sid: sid for sid in {t["signature"] for t in plan.tests}}
    first = plan.tests[0]["signature"]
    specs = [s for s in observe_specs(problem, plan, program_of) if s["kind"] == "activation"]
    assert [s.get("primary", True) for s in specs] == [True, False]
    assert specs[0]["program"] == first
    offered = {c["program"] for c in specs[1]["candidates"]}
    assert first not in offered and len(offered) == len(program_of) - 1
    one = {sid: "p" for sid in program_of}
    assert len([s for s in observe_specs(problem, plan, one)
                if s["kind"] == "activation"]) == 1


def test_a_picked_run_is_read_as_the_pick_and_only_an_offered_pick_is_believed() -> None:
    """Stage B says which candidate it ran; the parent reads the run as that program's and
    test's, and a pick it did not offer is an observer error (the requirement fails)."""
    spec = {"id": "r1", "program": "s1", "test": "t1", "kind": "activation", "count": 0,
            "sliced": [], "primary": False, "second": True, "salt": "x",
            "candidates": [{"program": "s1", "test": "t1"}, {"program": "s2", "test": "t2"}]}
    got = ObservedResult(status="ok", picked_program="s2", picked_test="t2")
    assert observations({"r1": got}, [spec], "s1") == ()
    (obs,) = observations({"r1": got}, [spec], "s2")
    assert obs.test == "t2" and obs.status == "ok" and obs.second
    forged = ObservedResult(status="ok", picked_program="s2", picked_test="t9")
    (bad,) = observations({"r1": forged}, [spec], "s1")
    assert bad.status == "error" and "not offered" in bad.reason


def test_no_loop_dims_are_watched_on_a_second_test_of_every_signature_too() -> None:
    """A loop switched on by data only some tests have (max |q| > 4) is not safe on the first
    test of each shape: every input together on one more test of each signature, which stage
    B picks among the others of that signature; never primary."""
    problem = load_problem("batched-attention-vmap")
    plan = plan_for(problem, "submit")
    program_of = {sid: sid for sid in {t["signature"] for t in plan.tests}}
    names: dict[str, list[str]] = {}
    for t in plan.tests:
        names.setdefault(t["signature"], []).append(t["name"])
    specs = [s for s in observe_specs(problem, plan, program_of) if s["dim"] == "B"]
    firsts = {s["program"] for s in specs if not s.get("candidates")}
    seconds = [s for s in specs if s.get("candidates")]
    assert {s["program"] for s in seconds} == {p for p in firsts if len(names[p]) > 1}
    for s in seconds:
        assert not s["primary"] and s["second"] and s["salt"]
        assert s["watch"] == ["q", "k", "v"] and len(s["groups"]) == 3
        assert sorted(c["test"] for c in s["candidates"]) == sorted(names[s["program"]][1:])


def test_runs_past_what_a_grade_runs_fail_closed_saying_why() -> None:
    """A problem that plans more observed runs than stage B runs in a grade: those past it are
    not skipped in silence; each fails its requirement as unobservable, and says why."""
    from jaxjudge.grading.observing import MAX_RUNS

    problem = load_problem("spectral-norm-power-iteration")
    plan = plan_for(problem, "submit")
    program_of = {sid: "p" for sid in {t["signature"] for t in plan.tests}}
    specs = [s for s in observe_specs(problem, plan, program_of) if not s.get("candidates")]
    specs = [{**specs[k % len(specs)], "id": f"r{k}"} for k in range(MAX_RUNS + 6)]
    seen = observations({}, specs, "p")
    assert len(seen) == MAX_RUNS + 6
    past = seen[MAX_RUNS:]
    assert all(o.status == "unobservable" and f"more than the {MAX_RUNS}" in o.reason
               for o in past)
    assert all(o.status == "error" for o in seen[:MAX_RUNS])
