"""Grading one submission: the Grader, the pipeline (stage A, spec rules, stage B, program
rules, comparison), plans, caches, scoring and the report."""
