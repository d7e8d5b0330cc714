import os

with open(os.path.join(JOB_DIR, "out.bin"), "wb") as f:  # noqa: F821 (harness global)
    for _ in range(100):
        f.write(b"y" * 100_000)
