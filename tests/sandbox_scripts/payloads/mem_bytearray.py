# 256 MB bytearrays, every page written, all kept: the reviewer's memory bomb.
hoard = []
while True:
    buf = bytearray(256 << 20)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    hoard.append(buf)
