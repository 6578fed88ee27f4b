"""`iolab` entry point: the command group and the one place errors become exit codes."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from iolab import __version__
from iolab.cli.options import DB_HELP, CliContext, add_db_option
from iolab.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, IolabError
from iolab.store.location import StoreLocation
from iolab.textsafe import shown

# Each subcommand lives in its own module and exposes `command`; a module is imported only
# when its command runs, and `iolab --help` lists them from the short help here, so neither
# pays for the libraries a command needs (scipy, SQLAlchemy, alembic).  A test checks that
# each line is its command's own short help.
COMMANDS: dict[str, tuple[str, str]] = {
    "parse": ("parse_cmd", "Recognise fio / xfs_io / dd results in FILEs (`-` is standard..."),
    "reproduce": (
        "reproduce_cmd",
        "Write the plan a pasted report's mkfs, mount and fio/xfs_io/dd...",
    ),
    "import": ("import_cmd", "Store the fio / xfs_io / dd results in FILEs under a label..."),
    "results": ("results_cmd", "List stored runs, or the samples of one run."),
    "plan": ("plan_cmd", "Look at a plan before running it: `iolab plan check PLAN`."),
    "run": ("run_cmd", "Run PLAN in the lab: its cases in randomized complete blocks,..."),
    "cleanup": ("cleanup_cmd", "Undo the changes (mounts, loop devices, images, md arrays, dm..."),
    "compare": ("compare_cmd", "Compare B against A (selectors: run:ID, ID:VARIANT,..."),
    "ab": ("ab_cmd", "Adaptive A/B of PLAN's variants: blocks until every KPI has a..."),
    "export": ("export_cmd", "Write the samples SELECTOR names (run:ID, label:NAME, tag:K=V,..."),
    "history": ("history_cmd", "One series per metric and case, change points, and registry..."),
    "regressions": (
        "regressions_cmd",
        "The regression registry: every entry with its status, size and...",
    ),
    "bisect": ("bisect_cmd", "Find the commit between --good and --bad that changed PLAN's..."),
    "report": ("report_cmd", "An HTML report of B against A (or of one run's variants), with..."),
    "publish": ("publish_cmd", "Write a static site of every run in the store to DIR (index,..."),
    "guest": ("guest_cmd", "QEMU guests booting real Debian kernels: build the image, run..."),
    "worker": ("worker_cmd", "Serve blocks of a fleet on this test host, one at a time,..."),
    "fleet": ("fleet_cmd", "The fleet's test hosts: status, drain, undrain and forget."),
    "cancel": ("cancel_cmd", "Cancel run RUN: no new block starts, blocks in flight end..."),
    "watch": ("watch_cmd", "Follow run RUN (local, fleet, A/B or bisect) until it ends:..."),
}


class IolabGroup(click.Group):
    """A click group that turns IolabError into one line on stderr and its exit code,
    and loads each subcommand's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module = importlib.import_module(f"iolab.cli.{entry[0]}")
        command: click.Command = module.command
        return add_db_option(command)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, short) in COMMANDS.items()])

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except IolabError as exc:
            click.echo(f"iolab: {shown(exc.message)}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("iolab: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except Exception as exc:
            if os.environ.get("IOLAB_DEBUG"):
                raise
            click.echo(f"iolab: internal error: {type(exc).__name__}: {shown(str(exc))}", err=True)
            sys.exit(EXIT_INTERNAL)


@click.group(cls=IolabGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="iolab")
@click.option(
    "--db",
    default=None,
    metavar="PATH|URL",
    help=DB_HELP,
)
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """iolab — a storage performance regression lab."""
    ctx.obj = CliContext(store=StoreLocation.given(db))


def main() -> None:
    # numpy's work here is vectors of tens to thousands of values, where BLAS threads only
    # cost start-up: 30-40 ms of `compare`'s 0.3 s on 2 cores (bench/compare_speed.py)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    cli(prog_name="iolab")
