#!/usr/bin/env bash
# Install jaxjudge as issue 42's course did on a host without network or root: a venv made
# with --system-site-packages over the host's own JAX, the project's runtime wheels installed
# with --no-index from WHEELS (`pip download` them elsewhere; jaxjudge's own wheel among them),
# then run `jaxjudge doctor` and bench/scaling.py with the arguments given.
#
#   bash bench/offline_host.sh WHEELS VENV -- --programs 60 --jobs 1,2,4,8,12 --unsafe
set -euo pipefail
wheels=$1 venv=$2
shift 2
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")/.." && pwd)
export JAXJUDGE_PROBLEMS_DIR=${JAXJUDGE_PROBLEMS_DIR:-$here/problems}  # a wheel bundles none
if [ ! -x "$venv/bin/jaxjudge" ]; then
    python3 -m venv --system-site-packages "$venv"
    PIP_CONFIG_FILE=/dev/null "$venv/bin/python" -m pip install --isolated -q --no-index \
        --no-deps --no-cache-dir "$wheels"/*.whl
fi
"$venv/bin/python" -c 'import jax, jaxjudge; print("jax", jax.__version__, "from", jax.__file__)'
"$venv/bin/jaxjudge" doctor || echo "doctor exited $? (a layer is missing)"
cd "$here"
exec "$venv/bin/python" bench/scaling.py "$@"
