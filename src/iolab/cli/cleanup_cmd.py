"""`iolab cleanup`: undo what killed runs left on the machine, from their journals."""

from __future__ import annotations

import click

from iolab.errors import LabError
from iolab.lab.journal import cleanup_leftover, journal_dir, leftovers


@click.command("cleanup")
@click.option("-n", "--dry-run", is_flag=True, help="Show what would be undone; change nothing.")
def command(dry_run: bool) -> None:
    """Undo the changes (mounts, loop devices, images, md arrays, dm maps, null_blk devices,
    sysctls, queue settings, trace instances) of iolab processes that died without restoring
    the machine (kill -9, crash); only what their journals say iolab made.
    Journals of processes still running are left alone.

    \b
    Examples:
      sudo iolab cleanup --dry-run
      sudo iolab cleanup
    """
    found = leftovers()
    dead = [left for left in found if not left.owner_alive]
    alive = len(found) - len(dead)
    if not dead:
        note = f" ({alive} journal(s) of running iolab processes left alone)" if alive else ""
        click.echo(f"nothing to clean up in {journal_dir()}{note}")
        return
    problems: list[str] = []
    for left in dead:
        run = left.meta.get("run_id")
        who = f"pid {left.pid}" + (f", run {run}" if run is not None else "")
        pending = left.pending
        if dry_run:
            click.echo(f"{who}: would undo {len(pending)} change(s)")
            for entry in reversed(pending):
                args = " ".join(f"{k}={v}" for k, v in sorted(entry.args.items()))
                click.echo(f"  {entry.kind} {args}")
            continue
        failures = cleanup_leftover(left)
        click.echo(f"{who}: undid {len(pending) - len(failures)} of {len(pending)} change(s)")
        problems.extend(failures)
    if problems:
        raise LabError(f"could not undo everything: {problems[0]}")
