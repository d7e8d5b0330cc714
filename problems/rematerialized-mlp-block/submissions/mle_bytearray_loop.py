# Memory limit exceeded: 256 MB bytearrays, every page written, kept forever. Each one is real
# resident memory (a fresh bytearray is zero pages until touched), so the run's memory grows by
# 256 MB per step until the limit stops it.
hoard = []
while True:
    buf = bytearray(256 << 20)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    hoard.append(buf)


def solve(params, x, y):
    raise NotImplementedError
