import numpy as np

arrays = []
while True:
    arrays.append(np.ones(4 << 20))  # 32 MiB, written
