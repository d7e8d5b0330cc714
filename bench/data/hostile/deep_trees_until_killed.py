# Deep, partly read-only directory trees built in the job dir and in /tmp, slowly, until the
# CPU limit kills the run in the middle of one.
import os

NAME = "d" * 60
for top in (".", "/tmp"):
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for i in range(4000):
        os.mkdir(NAME, dir_fd=fd)
        nfd = os.open(NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        if i % 50 == 49:
            os.chmod(fd, 0o500)
        os.close(fd)
        fd = nfd
        for _ in range(30_000):
            pass
while True:
    pass


def solve(step, w, g):
    return {"lr": step * 0.0, "w": w}
