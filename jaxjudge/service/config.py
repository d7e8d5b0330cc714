"""One `Settings` object for the whole service, read from JAXJUDGE_* environment variables.

Bad values fail at start-up (pydantic validation), never at the first request that needs them.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from jaxjudge.isolation.sandbox import LAYERS, layer_list
from jaxjudge.service.hosts import host_pattern  # the webhook policy's own normalization

LogLevel = Literal["critical", "error", "warning", "info", "debug"]


def _default_workers() -> int:
    return max(1, os.cpu_count() or 1)


class Settings(BaseSettings):
    """Service configuration. Every field maps to JAXJUDGE_<FIELD> (case-insensitive)."""

    # hide_input_in_errors: a rejected value may be a secret (tokens, webhook key, DB password).
    model_config = SettingsConfigDict(
        env_prefix="JAXJUDGE_", extra="ignore", frozen=True, hide_input_in_errors=True
    )

    database_url: str = Field(
        "sqlite:///var/jaxjudge.db",
        repr=False,  # may hold a password
        description="SQLAlchemy URL. SQLite paths are relative to the working directory; "
        "postgresql:// URLs use the psycopg (v3) driver.",
    )
    workers: int = Field(
        default_factory=_default_workers, ge=1, le=256, description="Concurrent grades."
    )
    queue_size: int = Field(
        100, ge=1, le=100_000, description="Submissions waiting for a worker before 503."
    )
    max_source_bytes: int = Field(
        64 * 1024, ge=1, le=16 * 1024 * 1024, description="Largest accepted source (UTF-8)."
    )
    wait_timeout_seconds: float = Field(
        30.0, ge=0, le=600, description="Longest a ?wait=true request is held open."
    )
    auth_tokens: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        repr=False,  # secrets
        description="Comma-separated bearer tokens; empty turns authentication off.",
    )
    rate_limit_per_minute: int = Field(
        60, ge=0, le=1_000_000, description="Requests per token per minute (0 = unlimited)."
    )
    host: str = Field("127.0.0.1", min_length=1, description="Address `jaxjudge serve` binds.")
    port: int = Field(8000, ge=1, le=65535, description="Port `jaxjudge serve` binds.")
    sandbox_require: str = Field(
        "all",
        description="Sandbox layers that must be active. The service grades untrusted code, so "
        "this is `all` (every layer); it cannot exempt a layer. To run without some layers, "
        "name them in unsafe_allow_missing_sandbox.",
    )
    unsafe_allow_missing_sandbox: str = Field(
        "",
        description="UNSAFE. Sandbox layers the service may grade without: `1` (any), or a "
        "comma list of cgroup, uid_pool, bwrap, seccomp, rlimits. Empty (the default): the "
        "service refuses to start while any layer is missing. Shown in /v1/system and logged "
        "as a warning at every start.",
    )

    @field_validator("sandbox_require")
    @classmethod
    def _check_layers(cls, v: str) -> str:
        names = layer_list(v, "JAXJUDGE_SANDBOX_REQUIRE") if v.strip() else frozenset()
        if names != frozenset(LAYERS):
            left_out = sorted(set(LAYERS) - names)
            raise ValueError(
                "the service requires every sandbox layer; JAXJUDGE_SANDBOX_REQUIRE cannot leave "
                f"out {', '.join(left_out)}. To grade without them anyway (unsafe), set "
                f"JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX={','.join(left_out)}"
            )
        return "all"

    @field_validator("unsafe_allow_missing_sandbox")
    @classmethod
    def _check_unsafe(cls, v: str) -> str:
        names = layer_list(v, "JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX")
        return "all" if names == frozenset(LAYERS) else ",".join(sorted(names))

    @property
    def required_layers(self) -> frozenset[str]:
        return frozenset(LAYERS)

    @property
    def allowed_missing_layers(self) -> frozenset[str]:
        return layer_list(self.unsafe_allow_missing_sandbox, "unsafe_allow_missing_sandbox")

    report_cache_size: int = Field(
        1024,
        ge=0,
        le=1_000_000,
        description="Reports kept in memory for resubmitted identical sources (0 = off). "
        "Time/memory-limit verdicts and internal errors are never cached.",
    )
    warm_pool: bool = Field(
        True,
        description="Run the sandboxed stages in a warm zygote pool (jax imported once per "
        "worker) instead of a fresh interpreter per stage.",
    )
    engine: Literal["interpret", "xla"] = Field(
        "interpret",
        description="How stage B runs the verified programs: 'interpret' evaluates small "
        "programs on jaxlib's StableHLO reference interpreter (no XLA compile per shape) and "
        "compiles the rest; 'xla' always compiles.",
    )
    log_level: LogLevel = Field("info", description="uvicorn and service log level.")
    log_format: Literal["plain", "json"] = Field(
        "plain",
        description="`serve` and `worker` log lines on stderr: 'plain' (UTC timestamp, level, "
        "logger, message) or 'json' (one object per line: time, level, logger, message, and "
        "submission and attempt on the lines of a grade).",
    )
    queue: Literal["local", "postgres"] = Field(
        "local",
        description="Where grading happens. 'local' (the default): `jaxjudge serve` grades, in "
        "`workers` grading processes of its own (in its own process when `workers` is 1). "
        "'postgres': API nodes only store and enqueue (a Procrastinate "
        "job in the submission's transaction) and `jaxjudge worker` processes grade; needs a "
        "postgresql database_url.",
    )
    worker_heartbeat_seconds: float = Field(
        2.0, gt=0, le=60,
        description="`jaxjudge worker`: how often a worker process proves it is alive.",
    )
    worker_stall_seconds: float = Field(
        10.0, gt=0, le=3600,
        description="`jaxjudge worker`: a worker whose last heartbeat is older than this is "
        "presumed dead and its jobs are redelivered (at least 3 heartbeats).",
    )
    worker_shutdown_seconds: float = Field(
        30.0, ge=0, le=3600,
        description="`jaxjudge worker`: on SIGTERM, how long in-flight grades may finish "
        "before they are abandoned (and redelivered to another worker).",
    )
    worker_metrics_port: int | None = Field(
        None, ge=1, le=65535,
        description="`jaxjudge worker`: serve this worker's Prometheus metrics (grades, grade "
        "seconds by stage, sandbox layers) at http://<worker_metrics_addr>:<port>/metrics. "
        "Unset: no metrics server.",
    )
    worker_metrics_addr: str = Field(
        "127.0.0.1", min_length=1,
        description="`jaxjudge worker`: the address its metrics server binds; it has no "
        "authentication, so keep it on loopback or a network only Prometheus reaches.",
    )
    metrics_enabled: bool = Field(
        True,
        description="Serve Prometheus metrics at GET /metrics (behind the same bearer auth as "
        "/v1 when auth_tokens is set).",
    )
    webhook_allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Hosts a submission's callback_url may name, comma-separated: exact names "
        "or IP addresses, '*.example.org' (any name below it) or '*' (any host; the address "
        "rules still apply). Empty (the default): callbacks are refused.",
    )
    webhook_secret: SecretStr | None = Field(
        None,
        repr=False,
        validate_default=True,
        description="Key that signs every callback (HMAC-SHA256 over its UTF-8 bytes), at "
        "least 32 bytes. Required when webhook_allowed_hosts is set.",
    )
    webhook_allow_private: bool = Field(
        False,
        description="Let callbacks reach loopback, private, link-local and CGNAT addresses "
        "(tests, a LAN). Off: such targets are refused even when the host is allowed.",
    )
    webhook_allow_http: bool = Field(
        False, description="Allow plain http:// callback URLs (default: https only)."
    )
    webhook_timeout_seconds: float = Field(
        10.0, gt=0, le=60, description="Bound on one delivery attempt, DNS to answer."
    )
    webhook_max_attempts: int = Field(
        8, ge=1, le=20, description="Delivery attempts per callback before giving up."
    )
    webhook_retry_base_seconds: float = Field(
        5.0, gt=0, le=3600,
        description="Wait after the first failed delivery; each further wait is 3 times the "
        "last, capped at an hour (tests shorten it).",
    )
    webhook_concurrency: int = Field(
        4, ge=1, le=256,
        description="Callback deliveries at once per process (`jaxjudge serve` with the local "
        "queue, or each `jaxjudge worker`), apart from the grading slots: a slow receiver "
        "never holds a grade.",
    )

    @field_validator("webhook_allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, v: Any) -> Any:

        if isinstance(v, str):
            v = v.split(",")
        if isinstance(v, list | tuple):
            return [host_pattern(str(h)) for h in v if str(h).strip()]
        return v

    @field_validator("webhook_secret", mode="before")
    @classmethod
    def _empty_secret(cls, v: Any) -> Any:
        return None if isinstance(v, str) and not v.strip() else v

    @field_validator("webhook_secret")
    @classmethod
    def _check_secret(cls, v: SecretStr | None, info: ValidationInfo) -> SecretStr | None:
        # A field validator (validate_default) rather than a model one: the error then names
        # this setting, and hide_input_in_errors keeps the value out of the message.
        if v is not None and len(v.get_secret_value().encode()) < 32:
            raise ValueError("the webhook secret must be at least 32 bytes")
        if v is None and info.data.get("webhook_allowed_hosts"):
            raise ValueError(
                "required when JAXJUDGE_WEBHOOK_ALLOWED_HOSTS is set (callbacks are signed)"
            )
        return v

    @field_validator("auth_tokens", mode="before")
    @classmethod
    def _split_tokens(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.split(",")
        if isinstance(v, list | tuple):
            tokens = [str(t).strip() for t in v]
            tokens = [t for t in tokens if t]
            for t in tokens:
                if any(c.isspace() for c in t) or not t.isprintable():
                    raise ValueError("auth tokens must be printable and contain no whitespace")
            return tokens
        return v

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_level(cls, v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("database_url")
    @classmethod
    def _check_url(cls, v: str) -> str:
        v = v.strip()
        # A plain postgresql:// URL would pick psycopg2, which we do not ship: use psycopg 3.
        for prefix in ("postgres://", "postgresql://"):
            if v.startswith(prefix):
                v = "postgresql+psycopg://" + v[len(prefix) :]
        try:
            url = make_url(v)
        except ArgumentError as exc:
            raise ValueError(f"not a database URL: {exc}") from exc
        if url.get_backend_name() not in ("sqlite", "postgresql"):
            raise ValueError("only sqlite and postgresql databases are supported")
        return v

    @model_validator(mode="after")
    def _check_queue(self) -> Settings:
        if self.queue == "postgres" and make_url(self.database_url).get_backend_name() != (
            "postgresql"
        ):
            raise ValueError(
                "JAXJUDGE_QUEUE=postgres needs a PostgreSQL database: set "
                "JAXJUDGE_DATABASE_URL=postgresql://user:password@host/dbname"
            )
        if self.worker_stall_seconds < 3 * self.worker_heartbeat_seconds:
            raise ValueError(
                "worker_stall_seconds must be at least 3 heartbeats "
                f"(3 x {self.worker_heartbeat_seconds} s): a busy but live worker would "
                "otherwise be presumed dead"
            )
        return self

    @property
    def auth_enabled(self) -> bool:
        return bool(self.auth_tokens)
