"""`iolab` entry point: the command group and the one place errors become exit codes."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from iolab import __version__
from iolab.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, IolabError

# Each subcommand lives in its own module and exposes `command`; modules are imported only
# when their command runs, so `iolab cleanup` does not pay for scipy and SQLAlchemy at start.
_COMMANDS = {
    "parse": "parse_cmd",
    "import": "import_cmd",
    "results": "results_cmd",
    "run": "run_cmd",
    "cleanup": "cleanup_cmd",
    "compare": "compare_cmd",
    "ab": "ab_cmd",
    "export": "export_cmd",
}


class IolabGroup(click.Group):
    """A click group that turns IolabError into one line on stderr and its exit code,
    and loads each subcommand's module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = _COMMANDS.get(cmd_name)
        if module_name is None:
            return None
        module = importlib.import_module(f"iolab.cli.{module_name}")
        command: click.Command = module.command
        return command

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




def main() -> None:
    cli(prog_name="iolab")
