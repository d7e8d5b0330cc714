"""Small helpers shared by test modules (imported like api_fixtures: tests/ is on sys.path)."""

from __future__ import annotations

from typing import Any

from jaxjudge import Grader, Problem, Report


def grade_through(runner: Any, problem: Problem, sources: list[str],
                  mode: str = "run") -> list[Report]:
    """Grade `sources` in order with a Grader whose stages `runner` launches."""
    g = Grader(runner=runner)
    return [g.grade(problem, source, mode) for source in sources]  # type: ignore[arg-type]


class Routed:
    """A test module's grader, rebuilt when a test changes its runner, engine or caches: each
    Grader holds its own collaborators, so nothing process-wide is set and reset."""

    def __init__(self, **settings: Any) -> None:
        self.settings = settings
        self.grader = Grader(**settings)

    def use(self, **changes: Any) -> None:
        """Change settings (None: back to Grader's default) for the following grades."""
        self.settings = {k: v for k, v in {**self.settings, **changes}.items() if v is not None}
        self.grader = Grader(**self.settings)

    def grade(self, *args: Any, **kwargs: Any) -> Report:
        return self.grader.grade(*args, **kwargs)


class CpuHog:
    """`count` busy-looping processes pinned to `cpus` (all CPUs if None), for tests of what a
    loaded machine must not change; each ends at the latest after `seconds` (bounded even if
    the test dies). A context manager: the processes are killed and reaped on exit."""

    def __init__(self, count: int, cpus: set[int] | None = None, seconds: float = 120) -> None:
        self.count, self.cpus, self.seconds = count, cpus, seconds
        self.procs: list[Any] = []

    def __enter__(self) -> CpuHog:
        import subprocess
        import sys

        code = ("import os,sys,time\n"
                f"cpus={sorted(self.cpus) if self.cpus else None!r}\n"
                "cpus and os.sched_setaffinity(0, cpus)\n"
                f"end=time.monotonic()+{self.seconds}\n"
                "while time.monotonic()<end:\n    pass\n")
        for _ in range(self.count):
            self.procs.append(subprocess.Popen([sys.executable, "-c", code]))
        return self

    def __exit__(self, *exc: object) -> None:
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
