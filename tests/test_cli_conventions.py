"""The command line's conventions (docs/cli.md), checked on every command and subcommand by
walking click's command tree, and on a few real invocations."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from iolab.cli.main import COMMANDS, cli
from iolab.cli.options import CommaList, Duration

# Options that hold a time: each takes a duration with its unit (`type=DURATION`).
_TIME_WORDS = re.compile(r"(wait|timeout|time|interval|deadline|heartbeat|settle|every)\b")

# Commands that do not follow a rule yet, by rule: the work that brings them in line empties
# this list (the test fails when a listed command already follows the rule).
NOT_YET: dict[str, set[str]] = {}


def _walk() -> Iterator[tuple[str, click.Command]]:
    for name in COMMANDS:
        command = cli.get_command(click.Context(cli), name)
        assert command is not None
        yield name, command
        if isinstance(command, click.Group):
            for sub in command.list_commands(click.Context(command)):
                subcommand = command.get_command(click.Context(command), sub)
                assert subcommand is not None
                yield f"{name} {sub}", subcommand


COMMAND_TREE = dict(_walk())


def _visible(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def _option(command: click.Command, flag: str) -> click.Option | None:
    return next((p for p in _visible(command) if flag in p.opts), None)


def broken_rules(command: click.Command) -> set[str]:
    """The conventions `command` does not follow (docs/cli.md, "Conventions")."""
    broken: set[str] = set()
    flags = {flag for p in _visible(command) for flag in p.opts}
    fmt = _option(command, "--format")
    if flags & {"--json", "--html", "--text", "--markdown"}:
        broken.add("format")  # one --format; older spellings are hidden aliases
    if fmt is not None and not isinstance(fmt.type, click.Choice):
        broken.add("format")
    output = _option(command, "--output")
    if output is not None and "-o" not in output.opts:
        broken.add("output")
    if fmt is not None and output is None:
        broken.add("output")  # output with several forms can also go to a file
    if any(
        _TIME_WORDS.search(p.name or "") and not isinstance(p.type, Duration)
        for p in _visible(command)
        if not p.is_flag
    ):
        broken.add("durations")
    kernels = _option(command, "--kernels")
    if kernels is not None and (
        kernels.multiple or kernels.nargs != 1 or not isinstance(kernels.type, CommaList)
    ):
        broken.add("kernels")
    if not any("--db" in p.opts for p in command.params if isinstance(p, click.Option)):
        broken.add("db")
    text = command.help or ""
    headed = re.search(r"^\s*Examples?:\s*$", text, re.MULTILINE)
    shown = re.search(r"^\s+(sudo )?(iolab|fio|benchstat)\b", text, re.MULTILINE)
    if not (headed and shown):
        broken.add("examples")
    return broken


@pytest.mark.parametrize("path", list(COMMAND_TREE))
def test_every_command_follows_the_conventions(path: str) -> None:
    assert broken_rules(COMMAND_TREE[path]) == NOT_YET.get(path, set())


def test_the_walk_sees_every_command_and_the_not_yet_list_names_only_real_ones() -> None:
    assert {"compare", "guest up", "guest run", "regressions mark", "plan check"} <= set(
        COMMAND_TREE
    )
    assert set(NOT_YET) <= set(COMMAND_TREE)


def test_the_rules_catch_what_they_describe() -> None:
    """The checker itself: a command breaking each rule is caught by that rule."""

    @click.command()
    @click.option("--json", is_flag=True)
    @click.option("--output", metavar="FILE")
    @click.option("--timeout", type=float)
    @click.option("--kernels", multiple=True)
    def bad(**_: object) -> None:
        """No example here."""

    assert broken_rules(bad) == {"format", "output", "durations", "kernels", "db", "examples"}


# --------------------------------------------------------------------------- invocations


def invoke(*args: str) -> click.testing.Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_db_after_the_command_is_the_global_db(tmp_path: Path) -> None:
    before, after = tmp_path / "before.db", tmp_path / "after.db"
    done = invoke("results", "--db", str(after))
    assert done.exit_code == 2 and str(after) in done.stderr and "no iolab store" in done.stderr
    done = invoke("--db", str(before), "results", "--db", str(after))
    assert str(after) in done.stderr and str(before) not in done.stderr
    done = invoke("--db", str(before), "results")
    assert str(before) in done.stderr


def test_output_goes_to_the_file_and_json_is_a_format(tmp_path: Path) -> None:
    fio = Path(__file__).parent / "data" / "fio-3.33" / "out" / "randread-3jobs.json"
    plain = invoke("parse", "--format", "json", str(fio))
    assert plain.exit_code == 0, plain.output
    old = invoke("parse", "--json", str(fio))
    assert old.stdout == plain.stdout and json.loads(old.stdout)
    out = tmp_path / "parsed.json"
    done = invoke("parse", "--format", "json", "-o", str(out), str(fio))
    assert done.exit_code == 0 and done.stdout == ""
    assert out.read_text() == plain.stdout
    # an error writes no file
    missing = tmp_path / "none.json"
    done = invoke("parse", "-o", str(missing), str(tmp_path / "no-such-file"))
    assert done.exit_code == 2 and not missing.exists()


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["guest", "run", "--timeout", "soon", "x.sh"], "--timeout 'soon'"),
        (["guest", "run", "--timeout", "0s", "x.sh"], "must be longer than 0s"),
        (["guest", "up", "g1", "--kernels", ",", "--broker", "redis://x"], "at least one"),
        (["report", "1"], "missing -o FILE"),
        (
            [
                "--db",
                "local.db",
                "guest",
                "up",
                "g1",
                "--kernels",
                "6.1.0-47-cloud-amd64",
                "--broker",
                "redis://127.0.0.1:6379/0",
            ],
            "needs the controller's store",
        ),
        (["results", "--no-such-option"], "No such option"),
    ],
)
def test_usage_errors_exit_2(args: list[str], fragment: str) -> None:
    done = invoke(*args)
    assert done.exit_code == 2, done.output
    assert fragment in done.stderr and "Traceback" not in done.stderr
