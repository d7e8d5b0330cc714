import os
import sys

print("hello from", os.getcwd(), "uid", os.getuid())
print("to stderr", file=sys.stderr)
print("ARGV", sys.argv[1:])
print("FDS", sorted(int(x) for x in os.listdir("/proc/self/fd")))
print("ENV", sorted(os.environ))
code = int(os.environ.get("PAYLOAD_EXIT", "0"))
sys.exit(code)
