"""The analysis engine the rules decide from: reading programs and what stage B saw them do.

- programs: `exported.py` (one exported program, as stage B wrote it, and the `Region` of it
  a rule points at), `stablehlo.py` (the capped parser of the generic MLIR form), `parsed.py`
  (every program of a grade parsed once, or why none can be read), `region.py` (the ops a
  rule decided on, with the ops that feed them);
- dataflow: `dataflow.py` (the inlined program as steps), `folding.py` (constant folding and
  the dependence it cuts), `identity.py` (steps that give an operand back), `flowpaths.py`
  (input-to-output paths, for the precision rules), `indexarrays.py` (small integer arrays
  run exactly);
- loops: `loops.py` (what a loop carries), `tripcount.py` (how many steps it runs),
  `stepslices.py` (whether it reads an input one step's slice at a time), `stepgates.py`
  (what its own conditions decide at each step), `dimindex.py` (loops that index a
  dimension's axis at their counter);
- execution evidence: `observed.py`, `observed_activation.py`, `observed_visits.py` (what
  stage B's observer saw), `trajectory.py` (a loop's answers step by step against the
  reference's), `executed_rules.py` (a custom_vjp's rules run on their own);
- the dimensions: `expr.py` (integer expressions over them), `dimrange.py` (their legal
  values).

Everything here reads trusted data under a work budget and knows no rule by name: no files,
no processes, no `RuleOutcome`. `jaxjudge.rules` (the layer above) names the rules a
`problem.toml` asks for and decides each from what this package computes.
"""
