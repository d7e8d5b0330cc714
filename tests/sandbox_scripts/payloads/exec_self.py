import os
import sys

try:
    os.execv(sys.executable, [sys.executable, "-I", "-c", "print('EXEC worked')"])
except OSError as exc:
    print("EXEC denied", exc.errno, flush=True)
