"""What a reader of README.md and docs/*.md can check mechanically: every `iolab` command line
they show names a command that exists, and only options that command takes (`--help` at hand
would contradict anything else); the packages README says `make deps` installs are the ones
it installs; and no page speaks the workshop's own words.  Command lines are read from inline
code spans, fenced code blocks and indented blocks."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from iolab.cli.main import cli

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# where an `iolab` command starts: at the start of a line or code span, or after a shell
# prompt, `sudo`, `.venv/bin/`, `&&`, `;` or a pipe
_START = re.compile(r"(?:^|&&|;\s|\|\s|\$\s|\(\s*)\s*(?:sudo\s+)?(?:\.venv/bin/)?iolab\s+(?=\S)")
_OPTION = re.compile(r"^(--?[A-Za-z][\w-]*)")


def snippets(text: str) -> Iterator[str]:
    """The lines of code a page shows: code spans, fenced blocks and indented blocks."""
    fenced = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    for block in fenced:
        yield from block.splitlines()
    prose = re.sub(r"^```[^\n]*\n.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    yield from re.findall(r"`([^`\n]+)`", prose)
    yield from (line[4:] for line in prose.splitlines() if line.startswith("    "))


def invocations(line: str) -> Iterator[str]:
    """Each `iolab …` command in a line of code, without comments and what follows a pipe."""
    line = re.sub(r"\s#\s.*$", "", line)  # a shell comment
    for start in _START.finditer(line):
        rest = line[start.end() :]
        yield re.split(r"\s(?:\||&&|;|>|<|2>)\s", rest)[0]


def words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # an unbalanced quote in a shortened example (`…`)
        return command.split()


def resolve(tokens: list[str]) -> tuple[click.Command, list[str], list[str]] | None:
    """(the command, its path, the remaining tokens); None when the first word after the
    global options is not a command (a placeholder such as CMD, or prose)."""
    command: click.Command = cli
    path: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i].strip("[]()")
        if token in ("--db",) and not path:
            i += 2
            continue
        if not isinstance(command, click.Group):
            break
        sub = command.get_command(click.Context(command), token)
        if sub is None:
            if not path and (not token.islower() or not token.isidentifier()):
                return None  # CMD, <command>, …: a placeholder
            break
        command, path = sub, [*path, token]
        i += 1
    if not path and i >= len(tokens):
        return None  # `iolab --db` named in prose
    return command, path, tokens[i:]


def options_of(command: click.Command) -> set[str]:
    names = {"--help", "-h", "--db"}
    for param in command.params:
        if isinstance(param, click.Option):
            names |= set(param.opts) | set(param.secondary_opts)
    return names


def shown_commands() -> Iterator[tuple[str, str]]:
    for page in PAGES:
        for line in snippets(page.read_text()):
            for command in invocations(line):
                yield page.name, command


def problems() -> list[str]:
    found = []
    for page, command in shown_commands():
        tokens = words(command)
        resolved = resolve(tokens)
        if resolved is None:
            continue
        cmd, path, rest = resolved
        if not path:
            found.append(f"{page}: `iolab {command}`: no such command")
            continue
        if isinstance(cmd, click.Group) and rest and rest[0].islower() and rest[0].isalpha():
            found.append(f"{page}: `iolab {command}`: no subcommand {rest[0]!r}")
            continue
        known = options_of(cmd)
        for token in rest:
            match = _OPTION.match(token.strip("[]()"))
            if match and match.group(1) not in known:
                found.append(f"{page}: `iolab {command}`: {' '.join(path)} has no {match[1]}")
    return found


def test_every_command_line_in_the_docs_exists_with_its_options() -> None:
    assert problems() == []


def test_the_docs_show_many_command_lines() -> None:
    """The reader finds what there is: most commands appear, so the check above has teeth."""
    lines = [command for _, command in shown_commands()]
    resolved = [resolve(words(command)) for command in lines]
    shown = {r[1][0] for r in resolved if r is not None and r[1]}
    assert len(lines) > 100
    assert {"parse", "import", "results", "run", "compare", "ab", "history", "bisect"} <= shown


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("`iolab results --bogus`", "results has no --bogus"),
        ("    sudo iolab regressions mark 3 fixed --evidnce run:4", "mark has no --evidnce"),
        ("```sh\n.venv/bin/iolab comapre 1 2\n```\n", "no such command"),
        ("`iolab fleet stats`", "no subcommand 'stats'"),
    ],
)
def test_the_check_catches_what_it_describes(
    text: str, bad: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    page = tmp_path / "page.md"
    page.write_text(text)
    monkeypatch.setitem(globals(), "PAGES", [page])
    found = problems()
    assert len(found) == 1 and bad in found[0], found


def test_good_lines_pass(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "`iolab --db x.db results --label nightly --format json -o out.json`\n"
        "    iolab compare A B [--margin 1] [--correction holm|bh]   # a comment --not-an-option\n"
        '```\niolab bisect p.yaml --build "make -j2" | head -3\n```\n'
        "`iolab CMD --help`; `iolab guest run --kernel R x.sh`\n"
    )
    monkeypatch.setitem(globals(), "PAGES", [page])
    assert problems() == []


def test_the_readme_lists_the_packages_make_deps_installs() -> None:
    """README's `make deps` row names exactly the apt packages scripts/install-deps installs."""
    script = (ROOT / "scripts" / "install-deps").read_text()
    installed = set(re.findall(r"need\+=\(([\w.+-]+)\)", script))
    (row,) = [
        line
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("| `make deps`")
    ]
    listed = {
        re.sub(r"\(.*\)", "", name).strip()
        for name in re.findall(r"apt packages: ([^;|]*)", row)[0].split(",")
    }
    assert len(installed) > 10 and listed == installed


# Words of the workshop the project was built in, not of its users: no page may use them.
_INTERNAL = re.compile(
    r"farm-studio|farm-bench|duplicates src|duplicate checker|\bissue \d+|issue's|"
    r"seed threads?|\bexample \([a-z]\)|other sessions|\bstop \d+\b",
    re.IGNORECASE,
)


def test_the_docs_use_no_internal_words() -> None:
    found = {
        (page.name, match.group(0).lower())
        for page in PAGES
        for match in _INTERNAL.finditer(page.read_text())
    }
    assert found == set()


def test_every_command_is_in_the_table_of_docs_cli_and_in_readmes_root_paragraph() -> None:
    """docs/cli.md's "Which command does what" has a row for every command, and README's
    paragraph on root says of every command whether it needs root."""
    from iolab.cli.main import COMMANDS

    cli_page = (ROOT / "docs" / "cli.md").read_text()
    table = cli_page.split("## Which command does what")[1].split("\n## ")[0]
    rows = re.findall(r"^\| `([a-z-]+)", table, re.MULTILINE)
    rows += re.findall(r"^\| `[a-z-]+`, `([a-z-]+)", table, re.MULTILINE)
    assert set(rows) == set(COMMANDS)
    readme = (ROOT / "README.md").read_text()
    (paragraph,) = [p for p in readme.split("\n\n") if p.startswith("**Root.**")]
    assert set(COMMANDS) <= set(re.findall(r"`([a-z-]+)", paragraph))
