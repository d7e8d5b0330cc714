"""The scale-out deployment files (deploy/): the compose file wires what the docs promise, and
every setting it passes is one the service knows and accepts.

No Docker daemon runs in CI, so these read the files; the deployment itself is exercised with
real processes by tests/test_jobqueue.py and bench/scaleout.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from jaxjudge.service.config import Settings

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def _compose() -> dict[str, Any]:
    data = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_services_are_two_api_nodes_workers_a_database_and_a_balancer() -> None:
    services = _compose()["services"]
    assert set(services) == {"db", "migrate", "api1", "api2", "worker", "lb"}
    for api in ("api1", "api2"):
        assert services[api]["command"][:2] == ["jaxjudge", "serve"]
        assert services[api]["depends_on"]["migrate"]["condition"] == (
            "service_completed_successfully"
        )
    assert services["worker"]["command"] == ["jaxjudge", "worker"]
    assert services["migrate"]["command"] == ["jaxjudge", "migrate"]
    assert services["migrate"]["depends_on"]["db"]["condition"] == "service_healthy"


def test_only_the_workers_get_the_sandbox_flags() -> None:
    services = _compose()["services"]
    worker = services["worker"]
    assert set(worker["security_opt"]) == {
        "seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"
    }
    # The image starts as root and its entrypoint keeps root for `worker` (the uid pool needs
    # it): a worker must not be moved to another user, and it sees the host's cgroup tree.
    assert worker.get("user", "0") in ("0", "root")
    assert worker["cgroup"] == "host" and "/sys/fs/cgroup:/sys/fs/cgroup:rw" in worker["volumes"]
    # The API nodes never run a submission: they get no loosened container profile.
    for api in ("api1", "api2"):
        assert "security_opt" not in services[api] and "user" not in services[api]


def test_every_jaxjudge_setting_is_known_and_valid() -> None:
    services = _compose()["services"]
    fields = {name.upper() for name in Settings.model_fields}
    for name in ("api1", "api2", "worker", "migrate"):
        env = services[name]["environment"]
        assert env["JAXJUDGE_QUEUE"] == "postgres"
        for key in env:
            if key.startswith("JAXJUDGE_") and key != "JAXJUDGE_QUIET_PROTECTIONS":
                assert key.removeprefix("JAXJUDGE_") in fields, f"{name}: unknown {key}"
        values = {
            k.removeprefix("JAXJUDGE_").lower(): re.sub(r"\$\{[^}]*\}", "x", str(v))
            for k, v in env.items()
            if k.startswith("JAXJUDGE_") and k != "JAXJUDGE_QUIET_PROTECTIONS"
        }
        settings = Settings(**values)  # raises if the compose file passes a bad value
        assert settings.queue == "postgres"
        assert settings.database_url.startswith("postgresql+psycopg://jaxjudge:")


def test_the_balancer_spreads_over_both_api_nodes() -> None:
    conf = (DEPLOY / "nginx.conf").read_text()
    assert re.findall(r"^\s*server (api\d):8000", conf, re.M) == ["api1", "api2"]
    # A held ?wait=true request (30 s by default) must outlive nginx's read timeout.
    timeout = int(re.search(r"proxy_read_timeout (\d+)s;", conf).group(1))  # type: ignore[union-attr]
    assert timeout > Settings.model_fields["wait_timeout_seconds"].default
