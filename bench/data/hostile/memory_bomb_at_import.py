# A list that grows without bound while the file is imported: a memory limit exceeded, whatever
# the machine's load (each element is a new int object, so the growth is bound by the CPU).
junk = []
while True:
    junk.append(len(junk))


def solve(step, w, g):
    return {"lr": step * 0.0, "w": w}
