#!/bin/sh
# The image's entrypoint: root only where grading needs it, the service user everywhere else.
#
# The sandbox's uid pool switches every graded run to a throw-away uid, which needs root, so the
# commands that grade (serve with the local queue, worker, grade-set, gradescope, grade,
# check-problem, and doctor, which reports what they get) keep root; run the container with
# user-namespace remapping or rootless Docker/Podman so that root is not the host's. Every other
# command (migrate, a shell, serve as an API node of the postgres queue) runs as the service user
# 10001 via setpriv. Files the graders create on /data are handed to 10001 (see own_data below),
# so a later run as 10001 on the same volume can open them, and grade-set's results to the owner
# of its --out folder.
#
# A container started without the flags in docs/sandbox-and-deployment.md lacks sandbox layers:
# the grading commands then refuse unless JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX names them.
# Saying which layers are off on stderr at start-up tells the operator why. Set
# JAXJUDGE_QUIET_PROTECTIONS=1 to skip the check (it imports the grader: about 0.2 s).
set -eu

SERVICE_UID=10001
SERVICE_GID=10001

if [ "$#" -eq 0 ]; then
    set -- jaxjudge serve
elif [ "${1#-}" != "$1" ]; then
    # `docker run IMAGE --port 9000` means options for the default command (whose host and port
    # come from JAXJUDGE_HOST/JAXJUDGE_PORT, 0.0.0.0:8000 in the image, unless given here).
    set -- jaxjudge serve "$@"
fi

# Does this command grade other people's code (and so need root for the uid pool)?
grades() {
    [ "${1##*/}" = jaxjudge ] || return 1
    case "${2:-}" in
        serve) [ "${JAXJUDGE_QUEUE:-local}" != postgres ] ;;
        worker | grade-set | gradescope | grade | check-problem | doctor) return 0 ;;
        *) return 1 ;;
    esac
}

# The SQLite database on the volume, created by the service user before a root process opens it:
# SQLite run as root gives its journal and WAL files the database file's owner, so everything
# on /data stays 10001's.
own_data() {
    case "${JAXJUDGE_DATABASE_URL:-}" in
        sqlite:///*) db="${JAXJUDGE_DATABASE_URL#sqlite:///}" ;;
        *) return 0 ;;
    esac
    db="${db%%\?*}"
    [ -e "$db" ] || setpriv --reuid="$SERVICE_UID" --regid="$SERVICE_GID" --clear-groups \
        -- touch "$db" 2>/dev/null || true
    if [ -f "$db" ] && [ "$(stat -c %u "$db")" = 0 ]; then
        # Made by an image that ran serve as root: give it (and its journals) to the service user.
        chown "$SERVICE_UID:$SERVICE_GID" "$db" "$db"-* 2>/dev/null || true
    fi
}

# grade-set's --out folder (its default when not given).
results_dir() {
    prev=
    for arg in "$@"; do
        case "$prev" in --out | -o) printf '%s' "$arg"; return ;; esac
        case "$arg" in --out=*) printf '%s' "${arg#--out=}"; return ;; esac
        prev=$arg
    done
    printf 'jaxjudge-results'
}

# Run grade-set as root, then give what it wrote to the owner of its --out folder: a course's
# bind-mounted ./results stays theirs although the grader needed root.
grade_set_for_owner() {
    out=$(results_dir "$@")
    owner=0:0
    [ ! -d "$out" ] || owner=$(stat -c %u:%g "$out")
    [ "$owner" != 0:0 ] || exec "$@"
    "$@" &
    child=$!
    trap 'kill -TERM "$child" 2>/dev/null || true' TERM INT HUP
    status=0
    wait "$child" || status=$?
    while kill -0 "$child" 2>/dev/null; do  # a trapped signal ends `wait` early
        status=0
        wait "$child" || status=$?
    done
    chown -R "$owner" "$out" || echo "jaxjudge: could not give $out to $owner" >&2
    exit "$status"
}

check_layers() {
    [ "${JAXJUDGE_QUIET_PROTECTIONS:-0}" != "1" ] || return 0
    python - <<'PY' >&2 || echo "jaxjudge: could not check the sandbox protections" >&2
from jaxjudge import protections

off = {name: info for name, info in protections().items() if not info.get("active")}
for name, info in off.items():
    print(f"jaxjudge: sandbox layer {name!r} is OFF: {info.get('detail', '')}")
if off:
    print("jaxjudge: see docs/sandbox-and-deployment.md, 'Running in a container', for the "
          "docker run flags")
PY
}

if [ "$(id -u)" != 0 ]; then
    # Started with --user: nothing to set up or drop; without root the uid pool is off.
    if grades "$@"; then check_layers; fi
    exec "$@"
fi

if grades "$@"; then
    own_data
    check_layers
    if [ "${2:-}" = grade-set ]; then grade_set_for_owner "$@"; fi
    exec "$@"
fi
exec setpriv --reuid="$SERVICE_UID" --regid="$SERVICE_GID" --clear-groups -- "$@"
