"""`iolab reproduce MAIL|- [-o PLAN] [--run [--quick]]`: the plan a pasted report implies,
every choice commented with its mail line; what was used and left out is listed."""

from __future__ import annotations

import sys
from collections.abc import Callable

import click

from iolab.errors import IngestError, IolabError
from iolab.textsafe import shown


@click.command("reproduce")
@click.argument("mail_path", metavar="MAIL|-")
@click.option(
    "-o",
    "--output",
    "output",
    default=None,
    metavar="PLAN",
    help="Write the plan to PLAN (default: standard output; the listing then goes to stderr).",
)
@click.option("--run", "run", is_flag=True, help="Then run `iolab ab` on the plan (needs -o).")
@click.option("--quick", is_flag=True, help="With --run: use the plan's `quick` profile.")
@click.option(
    "--max-blocks",
    "max_blocks",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="With --run: at most N blocks (ab's --max-blocks).",
)
@click.pass_context
def command(
    ctx: click.Context,
    mail_path: str,
    output: str | None,
    run: bool,
    quick: bool,
    max_blocks: int | None,
) -> None:
    """Write the plan a pasted report's mkfs, mount and fio/xfs_io/dd lines imply.

    \b
    Examples:
      iolab reproduce report.mail -o plan.yaml
      iolab reproduce - -o plan.yaml --run --quick < pasted.txt
    """
    from iolab.reproduce.service import reproduce, write_plan

    if run and output is None:
        raise IolabError("--run needs -o PLAN: ab runs a plan file")
    if (quick or max_blocks is not None) and not run:
        raise IolabError("--quick and --max-blocks go with --run")
    text = _read(mail_path)
    source = "<stdin>" if mail_path == "-" else mail_path
    done = reproduce(text, source)
    listing_to_stderr = output is None
    if output is None:
        click.echo(done.plan_text, nl=False)
    else:
        write_plan(output, done.plan_text)
    echo = _echo(listing_to_stderr)
    echo(f"used ({len(done.used)} mail lines):")
    for where, text_, what in done.used:
        echo(f"  {where:<13} {text_}  → {what}")
    if done.ignored:
        echo(f"ignored ({len(done.ignored)} command lines):")
        for where, text_, why in done.ignored:
            echo(f"  {where:<13} {text_}  — {why}")
    for note in done.notes:
        echo(f"note: {note}")
    if done.requires:
        echo(
            f"requires: {', '.join(done.requires)} "
            "(stated in the plan; `iolab run` refuses it here)"
        )
    if done.kernels:
        echo(f"kernels: {', '.join(done.kernels)} (variants that run on a host that boots kernels)")
    if output is not None:
        echo(f"wrote {output}")
    if run:
        from iolab.cli.ab_cmd import command as ab_command

        ctx.invoke(ab_command, plan_path=output, quick=quick, max_blocks=max_blocks)


def _echo(to_stderr: bool) -> Callable[[str], None]:
    def echo(line: str) -> None:
        click.echo(shown(line), err=to_stderr)

    return echo


def _read(path: str) -> str:
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as handle:
                data = handle.read()
    except OSError as exc:
        raise IngestError(path, f"cannot read it ({exc.strerror or exc})") from None
    if b"\0" in data[:65536]:
        raise IngestError(path if path != "-" else "<stdin>", "a binary file, not a mail")
    return data.decode("utf-8", errors="replace")
