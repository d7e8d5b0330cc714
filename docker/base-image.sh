#!/usr/bin/env bash
# A Debian bookworm base image for the Dockerfile's PYTHON_IMAGE, made from Debian packages with
# mmdebstrap: no container registry is asked for anything (`make container-base`). It needs a
# Debian mirror (mmdebstrap's default, or the one in /etc/apt/sources.list on a Debian host);
# the image build that follows needs a Python package index (PyPI, or PIP_INDEX_URL).
#
#   docker/base-image.sh            -> imports the base, prints its name on stdout (last line)
#   docker build --build-arg PYTHON_IMAGE=<that name> -t jaxjudge .
#
# The engine is $CONTAINER_ENGINE (default: podman if installed, else docker). The base tarball
# is cached in $JAXJUDGE_CONTAINER_CACHE (default /var/cache/jaxjudge-container as root,
# ~/.cache/jaxjudge-container otherwise) and rebuilt after 7 days. The host's own CA certificates
# (/usr/local/share/ca-certificates: a TLS-inspecting proxy's, a company's) go into the base, so
# the build's pip reaches the index where the host does; they are part of the image's name.
#
# Exit status: 0 built (or already there), 77 cannot here (the reason on stderr), 1 failed.
set -euo pipefail

skip() { echo "SKIP: $*" >&2; exit 77; }

ENGINE=${CONTAINER_ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}
command -v "$ENGINE" >/dev/null \
    || skip "$ENGINE is not installed (apt-get install podman mmdebstrap uidmap runc)"
if [ "$(id -u)" = 0 ]; then
    CACHE=${JAXJUDGE_CONTAINER_CACHE:-/var/cache/jaxjudge-container}
else
    CACHE=${JAXJUDGE_CONTAINER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/jaxjudge-container}
fi

cas=$(find /usr/local/share/ca-certificates -name '*.crt' 2>/dev/null | sort)
key=$( { echo bookworm; for f in $cas; do cat "$f"; done; } | sha256sum | cut -c1-12)
BASE=localhost/jaxjudge-base:bookworm-$key
mkdir -p "$CACHE"
tarball=$CACHE/base-bookworm-$key.tar
if [ -z "$(find "$tarball" -mtime -7 2>/dev/null)" ]; then
    command -v mmdebstrap >/dev/null \
        || skip "mmdebstrap is not installed (apt-get install mmdebstrap)"
    hooks=()
    if [ -n "$cas" ]; then
        # shellcheck disable=SC2016 # $1 is mmdebstrap's, the root of the new tree
        hooks=(--customize-hook='copy-in /usr/local/share/ca-certificates /usr/local/share'
               --customize-hook='chroot "$1" update-ca-certificates')
    fi
    echo "mmdebstrap: bookworm minbase with python3, python3-venv -> $tarball" >&2
    mmdebstrap --quiet --variant=minbase --format=tar \
        --include=python3,python3-venv,python-is-python3,ca-certificates "${hooks[@]}" \
        bookworm "$tarball.tmp" >&2 \
        || skip "mmdebstrap cannot build a bookworm base here (no Debian mirror?)"
    mv "$tarball.tmp" "$tarball"
    "$ENGINE" rmi -f "$BASE" >/dev/null 2>&1 || true
fi
if ! "$ENGINE" image inspect "$BASE" >/dev/null 2>&1; then
    "$ENGINE" import --change 'CMD ["/bin/sh"]' "$tarball" "$BASE" >/dev/null
fi
echo "$BASE"
