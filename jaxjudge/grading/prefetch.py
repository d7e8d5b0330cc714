"""Parsing stage B's verified programs while stage B still runs the tests.

Stage B writes each verified program's text (and the memory profile's specialised copy) before
it runs the tests, ~0.06 s of a new seed-problem program's 0.1 s job. The parent waits for it
on an otherwise idle core, then parses the same texts for the program rules and the memory
profile (~10 ms, on the grade's critical path). A `Prefetch` thread parses each text as soon
as it is there; the pipeline hands those modules to `parsed_once`, which gives them back for
an equal text only. So what decides is unchanged: a text read early but changed later (a rerun
after a crash), cut short, or unreadable is simply not asked for again, and the rules parse
what they read as before.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path

from jaxjudge.analysis.stablehlo import Module, ParseError, parse_module
from jaxjudge.grading.stage_common import MAX_PROGRAM_TEXT, read_regular

POLL_SECONDS = 0.002


class Prefetch(threading.Thread):
    """Polls `job` for `names` while stage B runs; `stop()` ends it and returns what it parsed
    (text -> module)."""

    def __init__(self, job: Path, names: list[str]) -> None:
        super().__init__(name="jaxjudge-prefetch", daemon=True)
        self.job, self.waiting = job, list(names)
        self.parsed: dict[str, Module] = {}
        self._stop_event = threading.Event()

    def run(self) -> None:
        while self.waiting and not self._stop_event.wait(POLL_SECONDS):
            for name in list(self.waiting):
                path = self.job / name
                if not path.is_file():
                    continue
                self.waiting.remove(name)  # read once: stage B writes it whole (rename)
                raw = read_regular(path, MAX_PROGRAM_TEXT)
                if raw is None or self._stop_event.is_set():
                    continue
                text = raw.decode("utf-8", "replace")
                with contextlib.suppress(ParseError):  # the rules parse it again, say why
                    self.parsed[text] = parse_module(text)

    def stop(self) -> dict[str, Module]:
        self._stop_event.set()
        self.join()
        return self.parsed
