chunks = []
while True:
    chunks.append(bytearray(16 << 20))
    for i in range(0, len(chunks[-1]), 4096):
        chunks[-1][i] = 1
