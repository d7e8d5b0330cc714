import mmap

maps = []
while True:
    m = mmap.mmap(-1, 32 << 20, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    for i in range(0, len(m), 4096):
        m[i] = 1
    maps.append(m)
