# Honest but slow: most of the memory limit held (and touched) once, then CPU until the limit.
held = bytearray(200 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
while True:
    pass
