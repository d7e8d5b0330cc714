# Honest but unusual: read every page of a large shared library through a read-only mapping.
# Those pages are file-backed page cache (the kernel may drop and re-read them), not memory the
# run holds, so they must not count against its memory limit.
import json
import mmap
import os

with open(os.path.join(JOB_DIR, "params.json")) as f:  # noqa: F821 (the harness's global)
    params = json.load(f)
with open(params["path"], "rb") as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
total = 0
for i in range(0, len(m), 4096):
    total += m[i]
print("MAPPED", len(m), total)
