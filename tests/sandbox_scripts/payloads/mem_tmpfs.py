# Many files, each below RLIMIT_FSIZE, so only memory (tmpfs pages) can stop this.
block = b"x" * (1 << 20)
i = 0
while True:
    with open(f"/tmp/fill-{i}", "wb") as f:
        for _ in range(30):
            f.write(block)
    i += 1
