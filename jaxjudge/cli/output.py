"""What the commands print: the consoles and a report's rendering, shared by `grade` and
`submit` (the same report reads the same whichever way it was graded)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from jaxjudge.grading.render import plain, repeats_details, source_ref, summary_line
from jaxjudge.grading.report import Report, Verdict

out = Console()
err = Console(stderr=True)

STYLE = {
    Verdict.ACCEPTED: "bold green",
    Verdict.SKIPPED: "dim",
}


def print_report(report: Report) -> None:
    style = STYLE.get(report.verdict, "bold red")
    out.print(f"[{style}]{report.verdict.value}[/]  {report.problem} ({report.mode})  "
              f"score {report.score:g}/{report.max_score:g}")
    # Messages and output carry what a submission printed or raised: never rich markup (a
    # `[link=...]` would become a terminal hyperlink), never terminal control sequences.
    out.print(Text(plain(summary_line(report)), style="bold"), highlight=False)
    if report.message and not repeats_details(report):
        out.print(Text(plain(report.message)), highlight=False)
    if report.tests:
        table = Table(title="Tests", show_lines=False)
        for col in ("test", "visible", "verdict", "message"):
            table.add_column(col)
        for t in report.tests:
            table.add_row(
                t.name,
                "yes" if t.visible else "hidden",
                f"[{STYLE.get(t.verdict, 'red')}]{t.verdict.value}[/]",
                Text(plain(t.message)),
            )
        out.print(table)
    if report.requirements:
        table = Table(title="Requirements")
        for col in ("requirement", "level", "passed", "message"):
            table.add_column(col)
        for r in report.requirements:
            where = source_ref(r)
            message = plain(r.message) + (f" (at {plain(where)})" if where else "")
            table.add_row(r.name, r.level, "[green]yes[/]" if r.passed else "[red]no[/]",
                          Text(message))
        out.print(table)
        for r in report.requirements:
            if r.evidence is not None and not r.passed:
                out.print(Text(f"{r.name}: in the program for {plain(r.evidence.program)}",
                               style="dim"), highlight=False)
                out.print(Text(plain(r.evidence.text)), highlight=False, soft_wrap=True)
    if report.memory is not None:
        out.print(Text("Memory: " + plain(report.memory.summary)), highlight=False)
    if report.output.strip():
        out.print("[dim]Your program's output (truncated):[/]")
        out.print(Text(plain(report.output[-2000:])), highlight=False)
    total = report.timings.get("total")
    if total is not None:
        out.print(f"[dim]graded in {total:.2f} s[/]")



def print_problems(console: Console, rows: list[tuple[str, str, str, str]]) -> None:
    """(id, title, difficulty, tags) rows. An id is never cut or wrapped, however narrow the
    terminal (it is what a learner copies into `-p`): the other columns give way, and below
    the room for a readable table each problem is one plain line."""
    width = max((len(row[0]) for row in rows), default=2)
    if console.width < width + 40:
        for pid, title, difficulty, _tags in rows:
            console.print(Text(f"{pid}  {difficulty}  {title}"), soft_wrap=True)
        return
    table = Table()
    table.add_column("id", no_wrap=True, min_width=width, overflow="ignore")
    for col in ("title", "difficulty", "tags"):
        table.add_column(col)
    for row in rows:
        table.add_row(*row)
    console.print(table)
