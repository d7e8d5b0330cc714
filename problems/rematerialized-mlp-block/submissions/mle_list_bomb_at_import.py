# Memory limit exceeded: a Python list grows without bound while the file is imported
# (each inner list is ~8 MB of pointers, all of it touched).
hoard = []
while True:
    hoard.append([0] * 1_000_000)


def solve(params, x, y):
    raise NotImplementedError
