"""Options shared by several commands: one definition, one help text, one validation."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import click
from click.core import ParameterSource

from iolab.errors import IolabError
from iolab.store.location import StoreLocation


@dataclass(frozen=True)
class CliContext:
    """What the `iolab` group hands its commands (click's `ctx.obj`)."""

    store: StoreLocation = field(default_factory=StoreLocation.given)


def store_location(ctx: click.Context) -> StoreLocation:
    """The store `--db` / $IOLAB_DB names (a command invoked on its own: $IOLAB_DB or the
    default)."""
    obj = ctx.find_object(CliContext)
    return obj.store if obj is not None else StoreLocation.given()


_TAG_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:-]*\Z")

margin_option = click.option(
    "--margin",
    type=float,
    default=1.0,
    show_default=True,
    metavar="PCT",
    help="'No change' means within ± this many percent.",
)

table_alpha_option = click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="The table's false-alarm rate: with holm, KPIs share 0.8*alpha and the other "
    "metrics 0.2*alpha (proportional KPIs such as iops and bw_bytes count once); with bh, "
    "each KPI at alpha.",
)

metric_option = click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="GLOB",
    help="Only metrics matching GLOB (repeatable), e.g. 'write.*'.",
)

text_format_option = click.option(
    "--format",
    "format_name",
    type=click.Choice(["table", "json", "markdown"]),
    default="table",
    show_default=True,
    help="table for the terminal, markdown for a mail or an issue, json for scripts.",
)

ci_option = click.option(
    "--ci",
    is_flag=True,
    help="Exit 10 when a KPI regressed, 11 when none did but one is inconclusive.",
)


def parse_tags(specs: tuple[str, ...]) -> dict[str, str]:
    """`--tag key=value` options as a dict, checked alike by import, run and ab (a tag that
    import refuses must not reach the store another way); malformed or repeated keys fail."""
    tags: dict[str, str] = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        key = key.strip()
        if not sep or not _TAG_KEY.match(key) or not value:
            raise IolabError(
                f"bad --tag {spec!r}: expected KEY=VALUE (key of letters, digits, _ . : -)"
            )
        if key in tags:
            raise IolabError(f"--tag {key} given twice")
        tags[key] = value
    return tags


def check_levels(alpha: float, margin: float) -> None:
    """--alpha and --margin as `compare` and `ab` accept them."""
    if not 0 < alpha < 0.5:
        raise IolabError(f"--alpha {alpha:g}: must lie between 0 and 0.5")
    if not 0 < margin < 100:
        raise IolabError(f"--margin {margin:g}: must lie between 0 and 100 (percent)")


def check_plan_or_resume(plan_path: str | None, resume: int | None) -> None:
    """A run command takes a PLAN to start a run or --resume RUN to continue one: exactly one."""
    if resume is not None and plan_path is not None:
        raise IolabError("give either PLAN or --resume RUN, not both")
    if resume is None and plan_path is None:
        raise IolabError("missing PLAN (or --resume RUN)")


def refuse_with_resume(
    ctx: click.Context, resume: int | None, defining: Mapping[str, str], what: str
) -> None:
    """With --resume RUN, options that define a run (`defining`: parameter → flag) are the
    run's own: naming one on the command line is an error, not silently ignored."""
    if resume is None:
        return
    given = [
        flag
        for name, flag in defining.items()
        if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
    ]
    if given:
        raise IolabError(f"{', '.join(given)}: {what} {resume} keeps its own")


def profile_of(quick: bool, profile: str | None) -> str | None:
    """`--quick` is `--profile quick`; naming two different profiles is an error."""
    if quick and profile and profile != "quick":
        raise IolabError("--quick and --profile name different profiles")
    return "quick" if quick else profile


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*$")


def parse_duration(text: str) -> float:
    """`90`, `90s`, `10m`, `1.5h` → seconds."""
    m = _DURATION.match(text)
    if not m:
        raise IolabError(f"--max-time {text!r}: expected a duration such as 90s, 10m or 1h")
    scale = {"m": 60.0, "min": 60.0, "h": 3600.0}.get(m.group(2) or "s", 1.0)
    seconds = float(m.group(1)) * scale
    if seconds <= 0:
        raise IolabError(f"--max-time {text!r}: must be positive")
    return seconds


def fleet_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """`--fleet CLASS [--hosts N] [--broker URL]`: the blocks run on a fleet's hosts."""
    f = click.option(
        "--broker",
        default=None,
        metavar="URL",
        help="The fleet's Redis (default $IOLAB_BROKER).",
    )(f)
    f = click.option(
        "--hosts",
        type=click.IntRange(1, 1000),
        default=1,
        show_default=True,
        metavar="N",
        help="With --fleet: blocks in flight at once (on N hosts).",
    )(f)
    return click.option(
        "--fleet",
        "fleet",
        default=None,
        metavar="CLASS",
        help="Run the blocks on the fleet's hosts of CLASS (needs a PostgreSQL store).",
    )(f)


def check_fleet_store(ctx: click.Context, fleet: str | None) -> None:
    """A fleet keeps its state in PostgreSQL: refuse any other store before it is opened
    (nor created)."""
    if fleet is None:
        return
    location = store_location(ctx)
    if not (location.is_url and location.text and location.text.startswith("postgresql")):
        raise IolabError(
            "a fleet keeps its state in PostgreSQL; give --db postgresql+psycopg://... "
            "(or set IOLAB_DB)"
        )


def fleet_source(
    store: Any, fleet: str | None, hosts: int, broker: str | None
) -> Callable[[Any], Any] | None:
    """The block source a `--fleet` run uses (None: here), after checking the store."""
    if fleet is None:
        return None
    from iolab.fleet import dispatch, service

    service.require_server_store(store)
    settings = dispatch.settings(fleet, hosts, service.broker_url(broker))

    def make(run: Any) -> Any:
        return dispatch.FleetBlocks(run, settings)

    return make
