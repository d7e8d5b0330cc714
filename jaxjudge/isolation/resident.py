"""Long-lived sandboxed processes: the warm pool's zygotes (jaxjudge.isolation.pool). `spawn`
starts one behind every layer but seccomp (it forks; it installs the filter in each child), and
`new_run_cgroup` gives each forked child its own per-run cgroup."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jaxjudge.isolation.bootstrap import _ENTER, _TRAMPOLINE
from jaxjudge.isolation.bwrap import _bwrap_args, _bwrap_sources, _overlay_plan, _python_roots
from jaxjudge.isolation.cgroups import RunCgroup, _RunCgroup, process_tree
from jaxjudge.isolation.layers import _detect, _select_layers, protections
from jaxjudge.isolation.limits import _PRIVATE_PREFIX, JOB_MOUNT, SandboxLimits
from jaxjudge.isolation.rlimits import _rlimits
from jaxjudge.isolation.supervisor import _base_env, _reap
from jaxjudge.isolation.uidpool import _clean_uid_leftovers, _kill_uid, _uid_slot

NO_NSPID = ("the zygote runs in a pid namespace (bwrap) but this kernel's /proc/<pid>/status "
            "has no NSpid: line (gVisor, Linux < 4.1), so its children's host pids cannot be "
            "found")


def read_status(pid: int) -> str:
    """/proc/<pid>/status, or '' once the process is gone."""
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""


def _nspid(status: str) -> list[int] | None:
    """The pids of a process from the outermost pid namespace inwards, or None when the kernel
    does not say (no `NSpid:` line)."""
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            with contextlib.suppress(ValueError):
                return [int(x) for x in line.split()[1:]] or None
            return None
    return None


def new_run_cgroup(limits: SandboxLimits, background: bool = False) -> RunCgroup | None:
    """A configured per-run cgroup, or None when the cgroup layer is inactive."""
    sup = _detect()
    if sup.cgroup is None or not protections()["cgroup"]["active"]:
        return None
    cg = _RunCgroup(sup.cgroup, f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}")
    try:
        cg.configure(limits, background)
    except OSError:
        cg.remove()
        raise
    return RunCgroup(cg)


def pool_support(prot: dict[str, dict] | None = None,
                 status: Callable[[int], str] = read_status) -> dict[str, Any]:
    """Whether the warm pool's zygotes can run here and how (`jaxjudge doctor`): the same facts
    `spawn` and `Resident.host_pid` act on. `prot`: protections(); `status`: as for Resident."""
    prot = prot if prot is not None else protections()
    on = {name: bool(info["active"]) for name, info in prot.items()}
    root = os.geteuid() == 0
    facts = {"pid_namespaces": on["bwrap"],
             "nspid": _nspid(status(os.getpid())) is not None,
             "root": root, "user_namespaces": on["bwrap"], "cgroups": on["cgroup"]}
    how = [("each zygote in its own pid namespace (bwrap, on user namespaces); its children "
            "found through the kernel's NSpid") if on["bwrap"] else
           "no pid namespaces (the bwrap layer is inactive); its children found by their pid",
           "a pool uid per zygote (root)" if on["uid_pool"] else
           "the zygotes keep this user's uid (no uid pool)",
           "a cgroup per child" if on["cgroup"] else
           "no cgroup layer: a child's memory is polled and it is killed by pid"]
    why = ""
    if not hasattr(os, "fork"):
        why = "no fork on this platform"
    elif on["bwrap"] and not facts["nspid"]:
        why = NO_NSPID
    elif root and not on["uid_pool"]:
        why = "as root, stages run only under the uid pool, which is inactive"
    detail = (f"no: {why}; every stage runs in a fresh process" if why
              else "yes: " + "; ".join(how))
    return {"active": not why, "detail": detail, **facts}


class Resident:
    """A long-lived process behind every layer but seccomp (it must fork; it installs the
    filter in each child itself), talking JSON lines over its stdin/stdout."""

    def __init__(self, proc: subprocess.Popen[bytes], stack: contextlib.ExitStack,
                 uid: int | None, cgroup: _RunCgroup | None, private: Path, inner_job: str,
                 layers: dict[str, bool], pid_namespace: bool) -> None:
        self.proc = proc
        self.uid = uid
        self.layers = layers
        # bwrap gave it a pid namespace: its descendants' pids there are not the host's.
        self.pid_namespace = pid_namespace
        # How /proc/<pid>/status is read: tests pass a view without the NSpid: lines that
        # gVisor and kernels before 4.1 lack.
        self.read_status: Callable[[int], str] = read_status
        self.inner_job = inner_job  # how the spool dir is named inside
        self.stderr_path = private / "stderr"
        self._stack = stack
        self._cgroup = cgroup
        self._private = private

    def script_pid(self, inner_pid: int) -> int | None:
        """Host pid of the script this resident runs, which says its own pid is `inner_pid`.
        Without a pid namespace that is the resident's process itself (the trampoline execs the
        interpreter); with one, its descendant (see `host_pid`)."""
        if not self.pid_namespace:
            return self.proc.pid if inner_pid == self.proc.pid else None
        return self.host_pid(inner_pid)

    def host_pid(self, inner_pid: int) -> int | None:
        """Host pid of a descendant (never the resident itself) whose pid in its own namespace
        is `inner_pid`, or None when there is none. Without a pid namespace a pid is the same
        everywhere; with one, the kernel says it in `NSpid:` (Linux >= 4.1; gVisor and older
        kernels give no such line, and then there is nothing to match by: OSError)."""
        tree = [pid for pid in process_tree(self.proc.pid) if pid != self.proc.pid]
        if not self.pid_namespace:
            return inner_pid if inner_pid in tree else None
        if _nspid(self.read_status(self.proc.pid)) is None:
            raise OSError(errno.ENOSYS, NO_NSPID)
        for pid in tree:
            nspid = _nspid(self.read_status(pid))
            if nspid is not None and nspid[-1] == inner_pid:
                return pid
        return None

    def stderr_tail(self, n: int = 2000) -> str:
        try:
            return self.stderr_path.read_bytes()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self) -> None:
        """Kill the process and everything it started; release the uid and the cgroup."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        try:
            if self._cgroup is not None:
                self._cgroup.kill_all()
            if self.uid is not None:
                _kill_uid(self.uid)
            _reap(self.proc)
            if self.uid is not None:
                _clean_uid_leftovers(self.uid, files=not self.layers["bwrap"])
            for f in (self.proc.stdin, self.proc.stdout):
                with contextlib.suppress(OSError):
                    if f is not None:
                        f.close()
        finally:
            self._stack.close()
            shutil.rmtree(self._private, ignore_errors=True)


def spawn(script: Path, job_dir: Path, limits: SandboxLimits, *,
          env: dict[str, str] | None = None, ro_dir: Path | None = None,
          rw_binds: tuple[tuple[str, str], ...] = (), gid: int | None = None,
          startup_seconds: float = 120.0,
          read_status: Callable[[int], str] = read_status) -> Resident:
    """Start `python -I <script> <job_dir>` for the long run: cgroup (the slot's own group),
    rlimits, pool uid (held until `close()`), bwrap with `job_dir` at /job and `ro_dir` (default:
    the script's directory) read-only; extra `rw_binds` (host, inside) only under bwrap. Who may
    write where in `job_dir` is the caller's business (see `Resident.uid`). Raises
    SandboxUnavailable or OSError when it cannot start, or when its descendants' host pids could
    not be found (`Resident.host_pid`): at once, not after the script's slow start-up.
    `read_status`: how /proc/<pid>/status is read (`Resident.read_status`)."""
    layers = _select_layers()
    sup = _detect()
    if layers["bwrap"] and sup.bwrap is not None and _nspid(read_status(os.getpid())) is None:
        raise OSError(errno.ENOSYS, NO_NSPID)
    script = script.resolve()
    job_dir = job_dir.resolve()
    ro = (ro_dir or script.parent).resolve()
    stack = contextlib.ExitStack()
    private = Path(tempfile.mkdtemp(prefix=f"{_PRIVATE_PREFIX}{os.getpid()}-"))
    try:
        uid = None
        if layers["uid_pool"]:
            uid = stack.enter_context(_uid_slot(startup_seconds))
        cg = None
        if layers["cgroup"] and sup.cgroup is not None:
            cg = _RunCgroup(sup.cgroup, f"run-{os.getpid()}-{uuid.uuid4().hex[:12]}")
            stack.callback(cg.remove)
            cg.configure(limits)
        use_bwrap = layers["bwrap"] and sup.bwrap is not None
        inner_job = JOB_MOUNT if use_bwrap else str(job_dir)
        read_fd, write_fd = os.pipe()
        stack.callback(os.close, read_fd)
        python = sys.executable
        enter = [python, "-I", "-c", _ENTER, "-", str(write_fd), str(script), inner_job]
        if use_bwrap:
            assert sup.bwrap is not None
            args = _bwrap_args(sup.bwrap, str(ro), str(job_dir), limits,
                               sup.bwrap_disable_userns)
            at = args.index("--remount-ro")
            extra = [x for host, inside in rw_binds for x in ("--bind", host, inside)]
            argv, cwd = args[:at] + extra + args[at:] + enter, None
        else:
            argv, cwd = enter, str(job_dir)
        overlay = None
        if uid is not None:
            sources = [(r, True) for r in _python_roots()] + [(str(ro), True), (str(job_dir), True)]
            sources += [(host, True) for host, _ in rw_binds] if use_bwrap else []
            sources += _bwrap_sources(sup.bwrap) if use_bwrap and sup.bwrap else []
            overlay = _overlay_plan(sources)
        spec = {
            "status_fd": write_fd,
            "cgroup_procs": cg.procs_files() if cg else [],
            "overlay": overlay,
            "rlimits": _rlimits(limits, layers, cg is not None) if layers["rlimits"] else [],
            "uid": uid,
            "gid": gid if (uid is not None and gid is not None) else uid,
            "cwd": cwd,
            "argv": argv,
            "unshare_ipc": uid is not None and not use_bwrap,
        }
        with open(private / "stderr", "wb") as fe:
            try:
                proc = subprocess.Popen(
                    [python, "-I", "-S", "-c", _TRAMPOLINE, json.dumps(spec)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=fe,
                    pass_fds=(write_fd,), close_fds=True, start_new_session=True,
                    env=_base_env(env), cwd=str(private),
                )
            finally:
                os.close(write_fd)
        res = Resident(proc, stack, uid, cg, private, inner_job, layers, use_bwrap)
        res.read_status = read_status
    except BaseException:
        stack.close()
        shutil.rmtree(private, ignore_errors=True)
        raise
    # The bootstrap reports "R" (or "E:<why>") on the status pipe once the script starts.
    deadline = time.monotonic() + startup_seconds
    got = b""
    while not got and time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([read_fd], [], [], 0.05)
        if ready:
            got = os.read(read_fd, 4096)
    if not got.startswith(b"R"):
        why = got.decode("utf-8", "replace")[2:] if got.startswith(b"E:") else "did not start"
        tail = res.stderr_tail()
        res.close()
        raise OSError(errno.EIO, f"resident process: {why} {tail.strip()[-500:]}")
    return res
