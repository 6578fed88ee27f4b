"""`iolab plan check PLAN`: validate a plan, list its cases, say where it can run and how
long it takes (docs/plan.md)."""

from __future__ import annotations

import click

from iolab.cli.options import format_option, output_option, to_output


@click.group("plan")
def command() -> None:
    """Look at a plan before running it: `iolab plan check PLAN`.

    \b
    Example:
      iolab plan check examples/ext4-iversion.yaml
    """


@command.command("check")
@click.argument("plan_path", metavar="PLAN")
@click.option(
    "--max-blocks",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="The ab budget to estimate (default: ab's own, 200).",
)
@format_option(["text", "json"], "text", "text for the terminal, json for scripts.")
@output_option
def check(plan_path: str, max_blocks: int | None, format_name: str, output: str | None) -> None:
    """Validate PLAN; list its cases and variants; say where it can run (here, a guest, a
    fleet) and estimate the wall time of `run`, `run --quick` and the `ab` budget.  An
    invalid plan exits 2 with `FILE:LINE: key: message`, as `iolab run` would.

    \b
    Examples:
      iolab plan check examples/ext4-iversion.yaml
      iolab plan check --format json plan.yaml -o check.json
    """
    from iolab.report.plan_check import render_json, render_text
    from iolab.runs.plan_check import check_plan

    found = check_plan(plan_path, max_blocks=max_blocks)
    with to_output(output):
        click.echo(render_json(found) if format_name == "json" else render_text(found), nl=False)
