"""The `jaxjudge` console script: what a one-off grade waits for starts before the CLI imports.

A cold `jaxjudge grade` is a race to start its sandboxed stages. Before it can, the sandbox
layers must be detected (~0.1 s of short sandboxed probe runs, mostly waiting) and the CLI must
import (~0.2 s of CPU). Started here, the probes run while the CLI imports instead of after.
"""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["grade"]:
        from grader import sandbox

        sandbox.detect_in_background()
    from app.cli import main as cli_main

    cli_main()
