# A memory bomb whose growth is bound by CPU, as Python building objects is (or page faults on
# a loaded machine): 1 MiB at a time at 128 MiB per CPU second, so a CPU limit can come first.
import time

chunks = []
while True:
    chunk = bytearray(1 << 20)
    for i in range(0, len(chunk), 4096):
        chunk[i] = 1
    chunks.append(chunk)
    while time.process_time() < len(chunks) / 128:
        pass
