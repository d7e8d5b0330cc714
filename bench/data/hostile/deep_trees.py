# Deep directory trees in the job dir and in /tmp, some left read-only or unsearchable, and a
# thread still building another when the run ends (solve itself is a plain wrong answer).
import os
import threading

NAME = "d" * 60


def grow(top: str, depth: int, pause: int = 0) -> None:
    try:
        fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
        for i in range(depth):
            os.mkdir(NAME, dir_fd=fd)
            nfd = os.open(NAME, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=nfd))
            if i % 50 == 49:
                os.chmod(fd, 0o500)  # its entries cannot be unlinked by a plain owner
            if i % 97 == 96:
                os.chmod(nfd, 0)  # nor listed
            os.close(fd)
            fd = nfd
            for _ in range(pause):
                pass
    except OSError:
        pass


os.mkdir("job-tree")
grow("job-tree", 2000)
os.makedirs("/tmp/tmp-tree", exist_ok=True)
grow("/tmp/tmp-tree", 2000)
os.makedirs("/tmp/still-growing", exist_ok=True)
threading.Thread(target=grow, args=("/tmp/still-growing", 100_000, 2000), daemon=True).start()


def solve(step, w, g):
    return {"lr": step * 0.0, "w": w}
