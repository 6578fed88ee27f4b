"""`iolab regressions import MAIL`: a 0-day/LKP robot mail's headlines into the registry.

One entry per regression headline — the mail's own ("noticed a 6.5% regression of
fio.write_iops") and each row of "also has significant impact on the following tests" —
keyed by (commit, metric, parameters), so importing the same mail again, or a reply that
quotes it, opens nothing new.  An entry already there is updated: the report's link is
added to its `reports` when it is new (logged as a note), nothing else is rewritten.
Improvements and headlines without a direction are not regressions and are listed as
skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iolab.errors import IngestError
from iolab.ingest.comparisons import find_comparisons
from iolab.ingest.detect import read_source
from iolab.model.comparison import Headline, RobotMail
from iolab.model.regression import NewRegression
from iolab.store import registry as table
from iolab.store.store import Store


@dataclass(frozen=True)
class Imported:
    """One headline and the registry entry it opened (`created`) or met."""

    regression_id: int
    created: bool
    updated: bool
    headline: Headline


@dataclass
class ImportOutcome:
    robot: RobotMail
    entries: list[Imported] = field(default_factory=list)
    skipped: list[Headline] = field(default_factory=list)


def robot_mail(path: str) -> RobotMail:
    """The robot facts of a mail; IngestError when it is not a 0-day/LKP report."""
    text = read_source(path)
    for t in find_comparisons(text, path):
        if t.robot is not None and t.robot.headlines:
            return t.robot
    raise IngestError(path, "no 0-day/LKP robot report (headline and comparison table) in it")


def dedup_key(commit: str, metric: str, parameters: dict[str, str]) -> str:
    params = ",".join(f"{k}={parameters[k]}" for k in sorted(parameters))
    return f"lkp|{commit}|{metric}|{params}"


def import_report(store: Store, path: str) -> ImportOutcome:
    robot = robot_mail(path)
    if robot.commit is None:
        raise IngestError(path, "the robot report names no commit (a `commit:` line)")
    outcome = ImportOutcome(robot)
    for h in robot.headlines:
        if h.direction != "regression":
            outcome.skipped.append(h)
            continue
        outcome.entries.append(_enter(store, robot, h))
    return outcome


def _enter(store: Store, robot: RobotMail, h: Headline) -> Imported:
    commit = robot.commit or ""
    params = dict(h.parameters)
    case = {
        "testcase": h.testcase,
        "parameters": params,
        "test_machine": h.machine,
    }
    details = {
        "commit": commit,
        "subject": robot.subject,
        "base": robot.base,
        "base_subject": robot.base_subject,
        "testcase": h.testcase,
        "parameters": params,
        "test_machine": h.machine,
        "direction": h.direction,
        "link": robot.link,
        "reports": [robot.link] if robot.link else [],
    }
    key = dedup_key(commit, h.metric, params)
    rid, created = table.add(
        store,
        NewRegression(
            metric=h.metric,
            case_key=f"lkp|{h.testcase}|{key.rsplit('|', 1)[-1]}",
            case=case,
            dedup_key=key,
            origin="lkp",
            culprit=commit,
            change_pct=h.change_pct,
            details=details,
            note=f"imported from {robot.link}" if robot.link else "imported from a robot mail",
        ),
    )
    updated = False
    if not created and robot.link:
        entry = table.get(store, rid)
        reports = list(entry.details.get("reports", []))
        if _message_id(robot.link) not in {_message_id(str(r)) for r in reports}:
            merged = dict(entry.details, reports=[*reports, robot.link])
            table.update_details(store, rid, merged, note=f"reported again: {robot.link}")
            updated = True
    return Imported(rid, created, updated, h)


def _message_id(link: str) -> str:
    """The report a link names: lore's `/oe-lkp/<id>` and `/r/<id>` are one message."""
    if "lore.kernel.org/" in link:
        return link.rstrip("/").rsplit("/", 1)[-1]
    return link
