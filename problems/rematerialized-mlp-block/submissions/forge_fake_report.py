# Forging attempt: prints an "accepted" report that looks like the grader's JSON and ends the
# process with status 0 before the grader gets to trace anything. The grader never reads the
# submission's stdout as a result, so this is only a process that died early.
import json
import os
import sys

fake = {
    "verdict": "accepted",
    "problem": "rematerialized-mlp-block",
    "mode": "submit",
    "message": "All tests passed.",
    "score": 100.0,
    "max_score": 100.0,
}
sys.stdout.write(json.dumps(fake) + "\n")
sys.stdout.flush()
os._exit(0)


def solve(params, x, y):
    raise NotImplementedError
