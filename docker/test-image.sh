#!/usr/bin/env bash
# The container path end to end, as a course or an operator would run it (`make container-test`):
# build a base image from Debian packages (docker/base-image.sh: mmdebstrap, no registry pulls),
# build the image with podman, then run the service and `grade-set` with $SANDBOX_FLAGS exactly as
# docs/sandbox-and-deployment.md writes it, and check verdicts, sandbox layers, the
# HEALTHCHECK, ownership on the data volume, a second run on that volume, and the compose file.
#
# Exit status: 0 passed, 1 failed, 77 cannot run here (the reason is printed), so that
# tests/test_container.py skips visibly. Needs root (rootful podman: the cgroup layer needs the
# host's cgroup tree) and podman, mmdebstrap, uidmap and runc (podman-compose for the compose
# check). Caches, kept between runs: the base image tarball in $JAXJUDGE_CONTAINER_CACHE
# (default /var/cache/jaxjudge-container, rebuilt after 7 days), podman's layer cache and the
# build's pip cache mount (podman's storage).
set -euo pipefail
cd "$(dirname "$0")/.."

CACHE=${JAXJUDGE_CONTAINER_CACHE:-/var/cache/jaxjudge-container}
IMAGE=localhost/jaxjudge:container-test
PROBLEM=rematerialized-mlp-block
SUBMISSIONS=problems/$PROBLEM/submissions
DOC=docs/sandbox-and-deployment.md
PORT=${JAXJUDGE_CONTAINER_TEST_PORT:-18731}
PREFIX=jaxjudge-container-test
WORK=$(mktemp -d)

skip() { echo "SKIP: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
step() { printf '\n== [%4ss] %s\n' "$SECONDS" "$*"; }
cleanup() {
    podman rm -f "$PREFIX-serve" >/dev/null 2>&1 || true
    podman volume rm -f "$PREFIX-data" "$PREFIX-cache" "$PREFIX-gcache" >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# What earlier builds of this image left untagged (the image the tag moved from, and the build
# stage: ~1.5 GB a run), or a developer's podman storage fills one `make test` at a time. Only
# dangling images older than the new one whose history installs into /opt/jaxjudge (this
# Dockerfile's) go; the layer cache the new image sits on stays, since it is still in use.
prune_earlier_builds() {
    local id removed=0
    for id in $(podman images -q --no-trunc --filter dangling=true --filter before="$IMAGE"); do
        if podman image inspect --format '{{range .History}}{{.CreatedBy}}{{end}}' "$id" \
                2>/dev/null | grep -q /opt/jaxjudge \
                && podman rmi "$id" >/dev/null 2>&1; then
            removed=$((removed + 1))
        fi
    done
    echo "removed $removed untagged image(s) of earlier builds"
}

[ "$(id -u)" = 0 ] \
    || skip "needs root: rootful podman (the cgroup layer needs the host's cgroup tree)"
for tool in podman runc; do
    command -v "$tool" >/dev/null \
        || skip "$tool is not installed (apt-get install podman mmdebstrap uidmap runc)"
done
podman info >/dev/null 2>"$WORK/info.err" \
    || skip "podman does not work here: $(tail -1 "$WORK/info.err")"

# ---- the base image: Debian packages only -------------------------------------------------------
# docker/base-image.sh (`make container-base`): mmdebstrap, the host's CA certificates, cached.
step "base image (docker/base-image.sh)"
BASE=$(CONTAINER_ENGINE=podman JAXJUDGE_CONTAINER_CACHE=$CACHE docker/base-image.sh)
echo "$BASE"

# Podman asks runc for nofile/nproc limits above ours; where we may not raise them (no
# CAP_SYS_RESOURCE, e.g. inside another sandbox) every container fails to start. Then use limits
# we hold, through a containers.conf of this run only.
if ! podman run --rm "$BASE" true 2>"$WORK/run.err"; then
    grep -q rlimit "$WORK/run.err" \
        || skip "podman cannot start a container here: $(tail -1 "$WORK/run.err")"
    nofile=$(ulimit -Hn)
    [ "$nofile" = unlimited ] && nofile=1048576
    printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=32768:32768"]\n' \
        "$nofile" "$nofile" >"$WORK/containers.conf"
    export CONTAINERS_CONF=$WORK/containers.conf
    podman run --rm "$BASE" true 2>"$WORK/run.err" \
        || skip "podman cannot start a container here: $(tail -1 "$WORK/run.err")"
    echo "podman: default ulimits lowered to what this shell holds ($CONTAINERS_CONF)"
fi

# ---- the image ----------------------------------------------------------------------------------
step "podman build --format docker (PYTHON_IMAGE=$BASE)"
build_start=$SECONDS
podman build --format docker --build-arg "PYTHON_IMAGE=$BASE" -t "$IMAGE" . \
    >"$CACHE/build.log" 2>&1 \
    || { tail -40 "$CACHE/build.log"; fail "podman build failed (log: $CACHE/build.log)"; }
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
echo "built in $((SECONDS - build_start)) s; image size $((size / 1000000)) MB"
prune_earlier_builds
[ "$(podman image inspect --format '{{json .Config.Healthcheck}}' "$IMAGE")" != null ] \
    || fail "the image lost its HEALTHCHECK"

# The flags exactly as the docs write them (the block is a shell assignment).
flags_line=$(sed -n '/^SANDBOX_FLAGS="/,/"$/p' "$DOC")
[ -n "$flags_line" ] || fail "no SANDBOX_FLAGS=\"...\" block in $DOC"
eval "$flags_line"
echo "SANDBOX_FLAGS=$SANDBOX_FLAGS"
docker() { podman "$@"; }  # the documented commands, run with podman

py() { python3 - "$@"; }
http() {  # http METHOD URL [JSON-BODY] -> body on stdout, exit 1 on an error status
    py "$@" <<'PY'
import json, sys, urllib.request
method, url = sys.argv[1], sys.argv[2]
data = sys.argv[3].encode() if len(sys.argv) > 3 else None
req = urllib.request.Request(url, data=data, method=method,
                             headers={"content-type": "application/json"})
with urllib.request.urlopen(req, timeout=600) as resp:
    sys.stdout.write(resp.read().decode())
PY
}
wait_healthy() {  # wait_healthy CONTAINER URL
    for _ in $(seq 240); do
        if http GET "$2/healthz" >/dev/null 2>&1; then return 0; fi
        [ "$(podman inspect --format '{{.State.Running}}' "$1")" = true ] \
            || { podman logs "$1" | tail -40; fail "$1 exited"; }
        sleep 0.5
    done
    podman logs "$1" | tail -40
    fail "$1 never answered on $2"
}
submit() {  # submit URL FILE -> verdict
    body=$(py "$2" <<'PY'
import json, sys
print(json.dumps({"problem_id": "rematerialized-mlp-block", "mode": "submit",
                  "source": open(sys.argv[1]).read()}))
PY
)
    http POST "$1/v1/submissions?wait=true" "$body" | json 'd["verdict"]'
}
json() {  # json EXPR: EXPR of the JSON document `d` read from stdin
    python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"
}
expect() {  # expect WHAT GOT WANT
    [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
    echo "ok: $1 = $2"
}

# ---- the service, as documented -----------------------------------------------------------------
step "the service: docker run -p ... -v jaxjudge-data:/data \$SANDBOX_FLAGS jaxjudge"
podman volume rm -f "$PREFIX-data" "$PREFIX-cache" "$PREFIX-gcache" >/dev/null 2>&1 || true
# shellcheck disable=SC2086 # $SANDBOX_FLAGS is a list of words, as in the docs
docker run -d --name "$PREFIX-serve" -p "127.0.0.1:$PORT:8000" -v "$PREFIX-data:/data" \
    -v "$PREFIX-cache:/var/cache/jaxjudge" $SANDBOX_FLAGS "$IMAGE" >/dev/null
url=http://127.0.0.1:$PORT
t0=$SECONDS; wait_healthy "$PREFIX-serve" "$url"; echo "answering after $((SECONDS - t0)) s"
layers=$(http GET "$url/v1/system" | json '" ".join(
    n + ("=on" if v.get("active") else "=OFF") for n, v in sorted(d["protections"].items()))')
expect "sandbox layers" "$layers" "bwrap=on cgroup=on rlimits=on seccomp=on uid_pool=on"
for case in accepted_reference_style:accepted wrong_forgets_b2:wrong_answer \
        compile_error_syntax:compile_error mle_list_bomb_at_import:memory_limit_exceeded; do
    t0=$(date +%s%N)
    verdict=$(submit "$url" "$SUBMISSIONS/${case%%:*}.py")
    echo "grade ${case%%:*}: $((($(date +%s%N) - t0) / 1000000)) ms"
    expect "verdict of ${case%%:*}" "$verdict" "${case##*:}"
done
podman healthcheck run "$PREFIX-serve" >/dev/null || fail "HEALTHCHECK fails on the default command"
echo "ok: HEALTHCHECK passes"
podman stop -t 30 "$PREFIX-serve" >/dev/null && podman rm "$PREFIX-serve" >/dev/null

step "ownership on the data volume"
owners=$(podman run --rm -v "$PREFIX-data:/data" --entrypoint find "$IMAGE" \
    /data -printf '%u:%g %p\n')
echo "$owners"
bad=$(echo "$owners" | grep -v '^jaxjudge:jaxjudge ' || true)
[ -z "$bad" ] || fail "files on /data not owned by 10001: $bad"
echo "ok: everything on /data belongs to 10001"

step "a second run on the same volume: migrate as 10001, then IMAGE --port 9000"
docker run --rm -v "$PREFIX-data:/data" "$IMAGE" jaxjudge migrate \
    || fail "jaxjudge migrate (the service user) cannot open the database"
# shellcheck disable=SC2086
docker run -d --name "$PREFIX-serve" -p "127.0.0.1:$PORT:9000" -v "$PREFIX-data:/data" \
    -v "$PREFIX-cache:/var/cache/jaxjudge" $SANDBOX_FLAGS "$IMAGE" --port 9000 >/dev/null
wait_healthy "$PREFIX-serve" "$url"
count=$(http GET "$url/v1/submissions?limit=100" | json 'len(d["items"])')
expect "submissions kept on the volume" "$count" 4
podman healthcheck run "$PREFIX-serve" >/dev/null || fail "HEALTHCHECK fails with --port 9000"
echo "ok: HEALTHCHECK passes on --port 9000"
podman stop -t 30 "$PREFIX-serve" >/dev/null && podman rm "$PREFIX-serve" >/dev/null

step "doctor with \$SANDBOX_FLAGS; a command that does not grade runs as 10001"
# shellcheck disable=SC2086
docker run --rm $SANDBOX_FLAGS "$IMAGE" jaxjudge doctor >"$WORK/doctor.out" 2>&1 \
    || { tail -30 "$WORK/doctor.out"; fail "jaxjudge doctor failed"; }
echo "ok: jaxjudge doctor"
expect "uid of 'id -u' in the image" "$(docker run --rm "$IMAGE" id -u 2>/dev/null)" 10001

# ---- grade-set, as documented -------------------------------------------------------------------
step "grade-set: docker run --rm -v subs -v results \$SANDBOX_FLAGS jaxjudge jaxjudge grade-set"
cd "$WORK"
mkdir subs results
cp "$OLDPWD/$SUBMISSIONS/accepted_reference_style.py" subs/alice.py
cp "$OLDPWD/$SUBMISSIONS/wrong_forgets_b2.py" subs/bob.py
cp "$OLDPWD/$SUBMISSIONS/compile_error_syntax.py" subs/carol.py
chown 4321:4321 results  # a course's own (non-root) folder: results come back as its owner's
for run in cold warm; do
    t0=$SECONDS
    # shellcheck disable=SC2086
    docker run --rm -v "$PWD/subs:/subs:ro" -v "$PWD/results:/results" \
        -v "$PREFIX-gcache:/var/cache/jaxjudge" $SANDBOX_FLAGS \
        "$IMAGE" jaxjudge grade-set /subs --problem "$PROBLEM" --out /results --force \
        >"$WORK/grade-set-$run.log" 2>&1 \
        || { tail -30 "$WORK/grade-set-$run.log"; fail "grade-set ($run) failed"; }
    echo "grade-set of 3 submissions ($run cache volume): $((SECONDS - t0)) s"
done
verdicts=$(cut -d, -f1,3 results/scores.csv | tail -n +2 | sort | tr '\n' ' ')
expect "grade-set verdicts" "$verdicts" "alice,accepted bob,wrong_answer carol,compile_error "
others=$(find results ! -uid 4321 | head -3)
[ -z "$others" ] || fail "result files not owned by the --out folder's owner: $others"
echo "ok: results belong to the --out folder's owner"
cd "$OLDPWD"

# ---- compose ------------------------------------------------------------------------------------
# Debian's podman-compose (1.0) has no `config`: `--dry-run up` prints the podman commands each
# service would get (it only creates the project's network and volume, removed below). Not run:
# `up` itself, since postgres:17 and nginx:1.27 cannot be pulled where only package registries
# are reachable.
step "deploy/compose.yaml (podman-compose --dry-run up)"
if command -v podman-compose >/dev/null; then
    POSTGRES_PASSWORD=test JAXJUDGE_AUTH_TOKENS=test podman-compose -p "$PREFIX" \
        -f deploy/compose.yaml --dry-run up -d >"$WORK/compose.out" 2>&1 \
        || { tail -20 "$WORK/compose.out"; fail "podman-compose cannot read deploy/compose.yaml"; }
    podman volume rm -f "${PREFIX}_pgdata" >/dev/null 2>&1 || true
    podman network rm -f "${PREFIX}_default" >/dev/null 2>&1 || true
    worker=$(grep -- "--name=${PREFIX}_worker_1" "$WORK/compose.out" || true)
    for flag in "--security-opt seccomp=unconfined" "--security-opt apparmor=unconfined" \
            "--security-opt systempaths=unconfined" "-v /sys/fs/cgroup:/sys/fs/cgroup:rw" \
            "jaxjudge worker"; do
        case "$worker" in *"$flag"*) ;; *) fail "compose: the worker lacks '$flag'" ;; esac
    done
    case "$worker" in *"--user"*) fail "compose: the worker must start as root (no --user)" ;; esac
    grep -q -- "--name=${PREFIX}_api1_1 .*docker-healthcheck" "$WORK/compose.out" \
        || fail "compose: api1 lost the healthcheck"
    echo "ok: compose services as podman-compose would run them (up not run: postgres:17 and"
    echo "    nginx:1.27 cannot be pulled here)"
else
    echo "not checked: podman-compose is not installed"
fi
step "passed in $SECONDS s"
