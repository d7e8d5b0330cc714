"""The `jaxjudge` console script: a one-off grade starts its stages before the CLI imports.

A cold `jaxjudge grade` is a race to its first sandboxed stage, whose `import jax` is most of
the grade. So for `grade -p ID ...` this module detects the sandbox layers (from the last
all-good probe, jaxjudge/isolation/layer_cache.py), reads the problem's limits (only those:
jaxjudge/problems/limits.py) and starts both stages (`jaxjudge.grading.early`) before the rest
of the CLI is even imported (typer, rich, the grading code and the problem package), and hands
them to the command as Click's context object. The command adopts them only if the problem it
loads has the same limits (the stages know nothing of the problem until their jobs); whatever
it does not adopt is cancelled here. When the grade is done and printed, the process leaves
without interpreter teardown.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jaxjudge.grading.early import Started


def problem_arg(argv: Sequence[str]) -> str | None:
    """The problem id in `grade` arguments written as `-p ID`, `--problem ID` or
    `--problem=ID`; None for any other spelling (the command parses it, only later)."""
    for i, arg in enumerate(argv):
        if arg == "--":
            return None
        if arg in ("-p", "--problem"):
            return argv[i + 1] if i + 1 < len(argv) else None
        if arg.startswith("--problem="):
            return arg.removeprefix("--problem=")
    return None


def start_stages(argv: Sequence[str]) -> Started | None:
    """Both stages for the problem `argv` names, started now; None when it names none plainly,
    overlapping is off, or anything fails: the command then starts them itself, or reports
    what is wrong with the problem in its own words."""
    from jaxjudge.grading import early
    from jaxjudge.isolation import sandbox

    sandbox.detect_in_background(cached=True)
    problem_id = problem_arg(argv)
    if problem_id is None:
        return None
    from jaxjudge.problems.limits import peek_limits

    limits = peek_limits(problem_id)  # [limits] only: the whole problem loads after the start
    if limits is None:
        return None  # the command says what is wrong with the problem
    from jaxjudge.grading.engine_hint import needs_xla

    return early.try_start(limits, limits.observed, jax=needs_xla(limits.problem_id))


def _status(code: object) -> int:
    """The process status `sys.exit(code)` would give."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stderr.write(f"{code}\n")
    return 1


def _terminate(signum: int, _frame: object) -> None:
    """SIGTERM or SIGHUP: unwind like Ctrl-C does, so that the stages are killed and their
    uids, cgroups and work dir released (the default action leaves those behind); a second
    signal does not cut that cleanup short."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def _exit_cleanly_on_termination() -> None:
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:  # `nohup` and the like keep theirs
            signal.signal(sig, _terminate)


def _join_threads() -> None:
    """Wait for what interpreter shutdown would wait for: the sandbox layer detection runs in
    a thread, and a command that ends first (--help, a usage error) would otherwise cut its
    probes short, leaving their temporary directories behind and storing nothing."""
    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()


def _flush(status: int) -> int:
    """Flush both streams; a report that could not be written (a full disk, a closed pipe)
    must not leave with status 0, which interpreter shutdown would not have either."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            if stream is sys.stdout and status == 0:
                status = 2
    return status


def _single_blas_thread() -> None:
    """One OpenBLAS thread for the CLI, unless the user set a count: the trusted side does no
    large linear algebra, and the pool that numpy's import starts spins for ~0.05 s of CPU,
    which a one-off grade's two stages want for their own `import jax` at that moment."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main() -> None:
    _single_blas_thread()
    argv = sys.argv[1:]
    if argv[:1] != ["grade"]:
        from jaxjudge.cli.service import main as cli_main

        cli_main()
        return
    _exit_cleanly_on_termination()
    status = 1
    started = None
    # No cyclic collections while the stages start and the CLI imports (~0.03 s of CPU, on
    # the two cores the stages' imports want too); on again before the grade itself.
    gc.disable()
    try:
        started = start_stages(argv[1:])
        from jaxjudge.cli.service import main as cli_main

        gc.freeze()  # the modules stay for the process's life: collections skip them
        gc.enable()
        try:
            cli_main(obj=started)
            status = 0
        except SystemExit as exc:
            status = _status(exc.code)
    finally:
        if started is not None:
            started.close()
        _join_threads()
    # The grade's processes are gone and its work dir removed; what is left is finalizing
    # ~1,000 modules (~0.05 s), which a one-off grade need not wait for.
    logging.shutdown()
    os._exit(_flush(status))
