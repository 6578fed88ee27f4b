"""`iolab` entry point: the command group and the one place errors become exit codes."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from iolab import __version__
from iolab.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, IolabError

# Each subcommand lives in its own module and exposes `command`.
_COMMANDS = (
    "parse_cmd",
    "import_cmd",
    "results_cmd",
    "run_cmd",
    "cleanup_cmd",
    "compare_cmd",
    "ab_cmd",
)


class IolabGroup(click.Group):
    """A click group that turns IolabError into one line on stderr and its exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except IolabError as exc:
            click.echo(f"iolab: {exc.message}", err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("iolab: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException, SystemExit):
            raise
        except Exception as exc:
            if os.environ.get("IOLAB_DEBUG"):
                raise
            click.echo(f"iolab: internal error: {type(exc).__name__}: {exc}", err=True)
            sys.exit(EXIT_INTERNAL)


@click.group(cls=IolabGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="iolab")
@click.option(
    "--db",
    envvar="IOLAB_DB",
    default=None,
    metavar="PATH|URL",
    help="Results store: a SQLite file path or a SQLAlchemy URL "
    "(default: $IOLAB_DB, else ~/.local/share/iolab/iolab.db).",
)
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """iolab — a storage performance regression lab."""
    ctx.ensure_object(dict)
    ctx.obj["db"] = db


def _register() -> None:
    import importlib

    for name in _COMMANDS:
        module = importlib.import_module(f"iolab.cli.{name}")
        cli.add_command(module.command)


_register()


def main() -> None:
    cli(prog_name="iolab")
