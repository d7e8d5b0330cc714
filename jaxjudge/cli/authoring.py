"""Commands for problem authors: `jaxjudge check-problem DIR`, `jaxjudge new-problem ID`,
`jaxjudge rules [NAME]` (the rule vocabulary with each rule's options, or one rule's
semantics)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

_out = Console()
_err = Console(stderr=True)


def register(cli: typer.Typer) -> None:
    @cli.command("check-problem")
    def check_problem_cmd(
        folder: Annotated[Path, typer.Argument(help="The problem package folder.")],
        samples: Annotated[
            bool, typer.Option("--samples/--no-samples", help="Also grade every sample.")
        ] = True,
        margins: Annotated[
            bool, typer.Option("--margins/--no-margins",
                               help="Also measure the tolerances' margins over honest float32 "
                                    "orders.")
        ] = True,
    ) -> None:
        """Validate a problem package: metadata and rules, tests, examples, the reference, the
        tolerances' margins and every sample's verdict. Exit status 0 when all checks pass, 1
        otherwise."""
        from jaxjudge.authoring.check import check_problem

        if not (folder / "problem.toml").is_file():
            _err.print(f"[bold red]error:[/] {folder} has no problem.toml")
            raise typer.Exit(2)
        with _err.status("checking...") as status:
            results = check_problem(folder, samples=samples, margins=margins,
                                    progress=lambda m: status.update(f"checking {m}..."))
        table = Table(title=f"check-problem {folder}")
        for col in ("check", "ok"):
            table.add_column(col)
        table.add_column("detail", overflow="fold")  # long file names wrap, never cut
        for r in results:
            table.add_row(r.name, "[green]yes[/]" if r.passed else "[red]no[/]", r.detail)
        _out.print(table)
        failed = [r for r in results if not r.passed]
        _out.print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
        raise typer.Exit(1 if failed else 0)

    @cli.command("new-problem")
    def new_problem_cmd(
        problem_id: Annotated[str, typer.Argument(help="The new problem's id (folder name).")],
        into: Annotated[Path, typer.Option("--dir", help="Where to create it.")] = Path(
            "problems"),
        title: Annotated[str | None, typer.Option(help="The problem's title.")] = None,
    ) -> None:
        """Scaffold a problem package that already passes check-problem, to edit from."""
        from jaxjudge.authoring.scaffold import new_problem
        from jaxjudge.problems.package import ProblemError

        try:
            dest = new_problem(problem_id, into, title)
        except ProblemError as exc:
            _err.print(f"[bold red]error:[/] {exc}")
            raise typer.Exit(2) from None
        _out.print(f"created {dest}: edit problem.toml, statement.md, reference.py and "
                   f"tests/generate.py, then run `jaxjudge check-problem {dest}`")

    @cli.command("rules")
    def rules_cmd(
        name: Annotated[str | None, typer.Argument(
            help="A rule's name: print its full semantics and options.")] = None,
    ) -> None:
        """List the rule vocabulary problem.toml requirements can use, with their options (or
        one rule's exact semantics)."""
        import inspect

        from jaxjudge.rules import RULES

        if name is not None:
            rule = RULES.get(name)
            if rule is None:
                _err.print(f"[bold red]error:[/] unknown rule {name!r} "
                           f"(known rules: {', '.join(sorted(RULES))})")
                raise typer.Exit(2)
            _out.print(f"[bold]{name}[/] ({rule.level} level)\n", highlight=False)
            for para in inspect.cleandoc(rule.check.__doc__ or rule.summary).split("\n\n"):
                _out.print(" ".join(para.split()) + "\n", highlight=False, markup=False)
            for key, f in rule.options.model_fields.items():
                need = "required" if f.is_required() else f"default {f.default!r}"
                _out.print(f"  {key} ({need}): {f.description or ''}", highlight=False,
                           markup=False)
            return
        table = Table(title="Rules")
        for col in ("rule", "level", "what it proves", "options"):
            table.add_column(col)
        for name, rule in sorted(RULES.items()):
            opts = ", ".join(
                f"{k}{'' if f.is_required() else '?'}"
                for k, f in rule.options.model_fields.items()
            )
            table.add_row(name, rule.level, rule.summary, opts)
        _out.print(table)
