"""`iolab guest build|run|up|down|list`: real Debian kernels in QEMU guests (docs/guests.md)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from iolab.cli.options import COMMA_LIST, DURATION, store_location
from iolab.errors import IolabError
from iolab.guest.vm import ICOUNT_MAX_SHIFT
from iolab.kernels.hooks import KEXEC_MODES
from iolab.textsafe import shown


def _log(line: str) -> None:
    click.echo(line, err=True)


def _files(paths: tuple[str, ...]) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for text in paths:
        path = Path(text)
        try:
            out[path.name] = path.read_bytes()
        except OSError as exc:
            raise IolabError(f"--file {text}: {exc.strerror or exc}") from None
    return out


# `guest run` and `guest up` take the same option
_CPUS = click.option(
    "--cpus",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Virtual CPUs (under TCG, one host thread each).",
)
_ICOUNT = click.option(
    "--icount",
    "icount_shift",
    type=click.IntRange(0, ICOUNT_MAX_SHIFT),
    default=None,
    metavar="SHIFT",
    help="TCG only, one CPU: the guest's clock counts instructions, 2**SHIFT ns each "
    "(docs/guests.md).",
)


@click.group("guest")
def command() -> None:
    """QEMU guests booting real Debian kernels: build the image, run a script, fleet hosts.

    \b
    Examples:
      sudo iolab guest build
      sudo iolab guest run --timeout 10m check.sh
    """


@command.command("build")
@click.option(
    "--kernels",
    type=COMMA_LIST,
    default=None,
    metavar="R1,R2,…",
    help="Kernel releases, comma-separated (default: 3).",
)
def build(kernels: tuple[str, ...] | None) -> None:
    """Build the guest image if this machine has none cached; print where it is.

    \b
    Examples:
      sudo iolab guest build
      sudo iolab guest build --kernels 6.1.0-47-cloud-amd64,6.1.0-50-cloud-amd64
    """
    from iolab.guest import image, recipe

    chosen = kernels or ()
    img = image.ensure(recipe.recipe_for(chosen) if chosen else recipe.default_recipe(), _log)
    info = img.build_info()
    click.echo(f"{img.path}  (built in {info['seconds']} s; {', '.join(img.recipe.kernels)})")


@command.command("run")
@click.option("--kernel", "kernel", default=None, metavar="RELEASE", help="Kernel to boot.")
@click.option("--file", "files", multiple=True, metavar="FILE", help="Beside the script.")
@click.option(
    "--timeout",
    "timeout_s",
    type=DURATION,
    default="10m",
    show_default=True,
    metavar="DURATION",
    help="Give up (and stop the guest) after this long.",
)
@click.option("--memory", "memory_mib", default=1024, show_default=True, help="MiB.")
@_CPUS
@_ICOUNT
@click.argument("script", type=click.Path(dir_okay=False, allow_dash=True))
def run(
    kernel: str | None,
    files: tuple[str, ...],
    timeout_s: float,
    memory_mib: int,
    cpus: int,
    icount_shift: int | None,
    script: str,
) -> None:
    """Boot a throw-away guest, run SCRIPT (bash) in it as root, print its output and exit
    with its status.  --file FILEs are in /run/iolab-cmd beside it.

    \b
    Examples:
      sudo iolab guest run check.sh
      sudo iolab guest run --kernel 6.1.0-50-cloud-amd64 --file plan.yaml --timeout 30m job.sh
    """
    from iolab.guest import image, recipe
    from iolab.guest import run as guest_run
    from iolab.lab.runner import interrupts_raise

    text = click.open_file(script).read()
    release = kernel or recipe.DEFAULT_KERNELS[-1]
    img = image.ensure(recipe.recipe_for((release,)), _log)
    # a SIGTERM (a timeout's, a CI job's end) stops QEMU and removes the work directory as
    # Ctrl-C does, rather than leaving them for the next run's sweep; exit 5
    with interrupts_raise():
        result = guest_run.run_script(
            img,
            release,
            text,
            files=_files(files),
            timeout_s=timeout_s,
            memory_mib=memory_mib,
            cpus=cpus,
            icount_shift=icount_shift,
        )
    for boot in result.boots:
        _log(f"guest: boot {boot.release} {boot.boot_id}")
        sys.stdout.write(boot.output)
    sys.exit(result.exit_status)


@command.command("up")
@click.argument("name")
@click.option(
    "--kernels",
    type=COMMA_LIST,
    required=True,
    metavar="R1,R2,…",
    help="Its kernels, comma-separated; it boots R1.",
)
@click.option("--broker", required=True, metavar="URL", help="The controller's Redis URL.")
@click.option(
    "--db",
    "db",
    default=None,
    metavar="URL",
    help="The controller's PostgreSQL (default: the store `iolab --db` or $IOLAB_DB names).",
)
@click.option("--class", "host_class", default="default", show_default=True, help="Its class.")
@click.option(
    "--service-command",
    default=None,
    metavar="SHELL",
    help="Run this instead of `iolab worker` (shell text; e.g. a probe).",
)
@click.option("--file", "files", multiple=True, metavar="FILE", help="In /run/iolab-cmd.")
@click.option("--memory", "memory_mib", default=1024, show_default=True, help="MiB.")
@_CPUS
@_ICOUNT
@click.option(
    "--wait",
    "wait_s",
    type=DURATION,
    default="5m",
    show_default=True,
    metavar="DURATION",
    help="How long it may take to boot.",
)
@click.option(
    "--hooks",
    "hooks_file",
    default=None,
    metavar="FILE",
    help="A TOML file whose [hooks] go into the guest's host config (docs/kernels.md).",
)
@click.option(
    "--kexec",
    type=click.Choice(KEXEC_MODES),
    default="direct",
    show_default=True,
    help="How a kernel switch ends the guest: systemctl kexec, or direct: the worker "
    "ended, sync, kexec -e.",
)
@click.pass_context
def up(
    ctx: click.Context,
    name: str,
    kernels: tuple[str, ...],
    broker: str,
    db: str | None,
    host_class: str,
    service_command: str | None,
    files: tuple[str, ...],
    memory_mib: int,
    cpus: int,
    icount_shift: int | None,
    wait_s: float,
    hooks_file: str | None,
    kexec: str,
) -> None:
    """Start guest NAME as a fleet host on this machine (the image built if missing).

    \b
    Examples:
      sudo iolab guest up g1 --kernels 6.1.0-47-cloud-amd64,6.1.0-50-cloud-amd64 \\
          --broker redis://127.0.0.1:6379/0 --db postgresql+psycopg://lab@127.0.0.1/iolab
    """
    from iolab.guest import hosts, image, recipe

    hosts.check_name(name)
    chosen = kernels
    if db is None:
        location = store_location(ctx)
        if not (location.is_url and location.text):
            raise IolabError("guest up needs the controller's store: --db postgresql+psycopg://…")
        db = location.text
    img = image.ensure(recipe.recipe_for(chosen), _log)
    host = hosts.up(
        name,
        img,
        chosen[0],
        broker=broker,
        db=db,
        host_class=host_class,
        command=service_command,
        files=_files(files),
        memory_mib=memory_mib,
        cpus=cpus,
        icount_shift=icount_shift,
        wait_s=wait_s,
        hooks=_hooks(hooks_file),
        kexec=kexec,
    )
    click.echo(f"{host.name}: up on {host.booted or chosen[0]} (pid {host.pid})")


def _hooks(path: str | None) -> dict[str, list[str]] | None:
    from pathlib import Path

    from iolab.kernels import hooks

    if path is None:
        return None
    return {k: list(v) for k, v in hooks.load(Path(path)).items()}


@command.command("power-cycle")
@click.argument("name")
def power_cycle(name: str) -> None:
    """Cut guest NAME's power and switch it on again (its power_cycle hook).

    \b
    Example:
      sudo iolab guest power-cycle g1
    """
    from iolab.guest import hosts

    host = hosts.power_cycle(name)
    click.echo(f"{host.name}: power-cycled (pid {host.pid})")


@command.command("down")
@click.argument("name")
def down(name: str) -> None:
    """Stop guest NAME and remove everything it made.

    \b
    Example:
      sudo iolab guest down g1
    """
    from iolab.guest import hosts

    if not hosts.down(name):
        raise IolabError(f"no guest named {shown(name)}")
    click.echo(f"{name}: down")


@command.command("list")
def list_() -> None:
    """The guests started by `iolab guest up`.

    \b
    Example:
      iolab guest list
    """
    from iolab.guest import hosts

    found = hosts.listing()
    if not found:
        click.echo("no guests")
        return
    click.echo(f"{'name':<16} {'state':<8} {'class':<10} {'kernel':<22} {'boots':>5} {'up':>7}")
    for h in found:
        state = "running" if h.alive else "dead"
        age = f"{(time.time() - h.started_at) / 60:.0f} min"
        click.echo(
            f"{shown(h.name):<16} {state:<8} {shown(h.host_class):<10} "
            f"{h.booted or '(booting)':<22} {h.boots:>5} {age:>7}"
        )
