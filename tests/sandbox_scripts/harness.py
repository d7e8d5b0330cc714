"""Trusted test harness: runs JOB_DIR/payload.py the way a stage runs a submission.

Prints one line per probe the payload reports; the payload itself decides what to print.
"""

import os
import sys

job_dir = sys.argv[1]
path = os.path.join(job_dir, "payload.py")
with open(path, encoding="utf-8") as f:
    code = compile(f.read(), path, "exec")
exec(code, {"__name__": "__main__", "JOB_DIR": job_dir})
