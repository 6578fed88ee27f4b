"""`reproduce(text, source)`: a mail's text → a plan that loads, and what was used or left out.

The text may be a saved message (.eml: headers, quoted-printable, format=flowed) or a paste;
line numbers are the text's own lines (those of the decoded body when the message had to be
decoded).  The plan is loaded, with its `quick` profile, before it is returned: a draft that
iolab itself would refuse is an error here, not a file left for the user to discover.

Hook: when the mail holds no command line or job file, each function in `OTHER_READERS` is
asked in turn (a test robot's report — 0-day's `testcase:`/`parameters:` header — gives a
plan through its parameters); only when none answers is the mail refused.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from iolab.errors import IngestError, IolabError, PlanError
from iolab.ingest import mail
from iolab.reproduce import draft as drafting
from iolab.reproduce import writer


@dataclass(frozen=True)
class Reproduction:
    plan_text: str
    used: list[tuple[str, str, str]]  # (where, mail text, what it became)
    ignored: list[tuple[str, str, str]]  # (where, mail text, why)
    notes: list[str]
    requires: list[str]  # requirement names stated in the plan
    kernels: list[str]  # kernel releases its variants name
    # each option of a used command the plan does not carry: (where, option, why); also in notes
    left_out: tuple[tuple[str, str, str], ...] = ()


def robot_reproduction(text: str, source: str) -> Reproduction | None:
    """A 0-day/LKP fio-basic report: the plan its first parameter set implies (the others
    are named in the notes, since one plan measures one job), None for any other mail."""
    from iolab.ingest.comparisons import find_comparisons, table_lines
    from iolab.reproduce.robot_lines import used_lines
    from iolab.reproduce.robot_tables import robot_plans

    try:
        plans = robot_plans(find_comparisons(text, source))
    except IngestError:
        raise
    except IolabError as exc:  # a parameter set fio-basic cannot run: the mail is named
        raise IngestError(source, exc.message) from None
    if not plans:
        return None
    first = plans[0]
    lines, offset, _ = table_lines(text)
    used, ignored = used_lines(lines, offset, first)
    notes = list(first.notes)
    if len(plans) > 1:
        notes.append(
            f"the report has {len(plans)} fio-basic parameter sets; this plan is the first "
            "(the others are listed in its comments' source lines)"
        )
    return Reproduction(first.text, used, ignored, notes, [], [])


def cell_reproduction(text: str, source: str) -> Reproduction | None:
    """An old 0-day writeback comparison whose cell names hold its matrix (reproduce.cells),
    None for any other mail."""
    from iolab.ingest.comparisons import find_comparisons
    from iolab.reproduce.cells import cell_plan

    found = cell_plan(find_comparisons(text, source))
    if found is None:
        return None
    return Reproduction(found.text, found.used, [], found.notes, ["md"], [])


# (text, source) -> a Reproduction, or None when the mail is not of the reader's kind
OTHER_READERS: list[Callable[[str, str], Reproduction | None]] = [
    robot_reproduction,
    cell_reproduction,
]
_MAX_TEXT = 4 << 20


def reproduce(text: str, source: str) -> Reproduction:
    """The plan the mail's commands imply (see the module docstring); IngestError (exit 2)
    when there is nothing to reproduce, PlanError when the draft does not load."""
    done = drafted(text, source)
    _check_loads(done.plan_text, source)
    return done


def drafted(text: str, source: str) -> Reproduction:
    """`reproduce` without its check that the plan loads (property tests read the plan back
    themselves, many times a second)."""
    if len(text) > _MAX_TEXT:
        raise IngestError(source, f"more than {_MAX_TEXT >> 20} MiB of text: not a mail")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    body = mail.message_text(text)
    at = text.find(body) if body != text else 0
    offset = text[:at].count("\n") if at >= 0 else 0
    raw = body.split("\n")
    lines = mail.unquote(raw)
    depths = [mail.quote_depth(line) for line in raw]
    subject = _subject(text if body != text else "\n".join(lines))
    try:
        found = drafting.build(
            lines, depths, offset, subject, _captions(body, lines, offset), source
        )
    except drafting.NothingToReproduce as exc:
        for other in OTHER_READERS:
            answer = other(text, source)
            if answer is not None:
                return answer
        raise IngestError(source, str(exc)) from None
    plan_text = writer.render(found)
    return Reproduction(
        plan_text,
        sorted(found.used, key=_line_order),
        sorted(found.ignored, key=_line_order),
        found.notes,
        [name for name, _, _ in found.requires],
        [str(v.overrides["kernel"]) for v in found.variants if "kernel" in v.overrides],
        tuple(found.left_out),
    )


def _line_order(entry: tuple[str, str, str]) -> int:
    """`line 25` / `lines 40-43` → 25: the listing in mail order."""
    digits = "".join(ch if ch.isdigit() else " " for ch in entry[0]).split()
    return int(digits[0]) if digits else 0


def _subject(text: str) -> str | None:
    from iolab.reproduce import context

    return context.subject(text)


def _captions(body: str, lines: list[str], offset: int) -> list[tuple[str, int]]:
    """Each result's caption in the mail and the line it is on (results iolab parse reads)."""
    from iolab.ingest.detect import parse_text

    try:
        results = parse_text(body, "mail")
    except IngestError:
        return []
    out: list[tuple[str, int]] = []
    after = 0
    for result in results:
        if not result.caption:
            continue
        line = next(
            (i for i in range(after, len(lines)) if _names(lines[i], result.caption)),
            next((i for i in range(len(lines)) if _names(lines[i], result.caption)), None),
        )
        if line is None:
            continue
        after = line + 1
        out.append((result.caption, offset + line + 1))
    return out


def _names(line: str, caption: str) -> bool:
    """Whether `line` is the caption line (`- w/o:`, `With -o iversion:`, `6.8-rc7: …`)."""
    text = line.strip().lstrip("-*+•#").strip().rstrip(":").strip()
    return text == caption or text.startswith(caption + ":")


def _check_loads(plan_text: str, source: str) -> None:
    from iolab.plan import load_plan

    with tempfile.TemporaryDirectory(prefix="iolab-reproduce-") as tmp:
        path = os.path.join(tmp, "plan.yaml")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(plan_text)
        for profile in (None, "quick"):
            try:
                load_plan(path, profile)
            except IolabError as exc:  # invalid, or refused by the lab's path rules
                message = exc.message.replace(path, "the drafted plan")
                raise PlanError(
                    f"{source}: the plan drafted from it does not load: {message}"
                ) from None


def write_plan(path: str, text: str) -> None:
    """Write the plan whole or not at all (a temporary file renamed into place)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".iolab-plan-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
