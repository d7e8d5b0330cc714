#!/bin/sh
# The image's entrypoint: say which sandbox layers this container can give, then run the command.
#
# A container started without the flags in docs/sandbox-and-deployment.md lacks sandbox layers:
# `serve` and `grade-set` then refuse to grade unless JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX names
# them. Saying which layers are off on stderr at start-up tells the operator why. Set
# JAXJUDGE_QUIET_PROTECTIONS=1 to skip the check (it imports the grader: about 0.2 s).
set -eu

if [ "$#" -eq 0 ]; then
    set -- jaxjudge serve --host 0.0.0.0 --port 8000
elif [ "${1#-}" != "$1" ]; then
    # `docker run IMAGE --port 9000` means options for the default command.
    set -- jaxjudge serve "$@"
fi

if [ "${JAXJUDGE_QUIET_PROTECTIONS:-0}" != "1" ]; then
    python - <<'PY' >&2 || echo "jaxjudge: could not check the sandbox protections" >&2
from jaxjudge import protections

off = {name: info for name, info in protections().items() if not info.get("active")}
for name, info in off.items():
    print(f"jaxjudge: sandbox layer {name!r} is OFF: {info.get('detail', '')}")
if off:
    print("jaxjudge: see docs/sandbox-and-deployment.md (Docker flags) for the docker run flags")
PY
fi

exec "$@"
