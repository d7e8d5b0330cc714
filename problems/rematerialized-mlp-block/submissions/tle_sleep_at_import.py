# Time limit exceeded: the file sleeps "forever" while it is being imported.
import time

time.sleep(10**6)


def solve(params, x, y):
    raise NotImplementedError
