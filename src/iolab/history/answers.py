"""The lab's answers to a registry entry: what an A/B of its two kernels found, and what a
bisect over its range named.

An entry imported from a robot mail (`regressions import`) claims that a commit slowed a
test down against its base.  The lab answers it in two ways (docs/history.md):

- **An A/B of the two commits** (`iolab ab` of a plan whose variants are the kernels
  `{commit: BASE}` and `{commit: COMMIT}`, as `reproduce` writes from the mail): when the run
  ends, every open entry whose base and commit are the run's two variants gets the answer —
  *reproduced* (a KPI regressed: its interval, and the secondary metrics that moved), *not
  reproduced* (every KPI within the equivalence margin, or better), or *not known*.  The
  association is by commit: the run's stored plan names them, the entry recorded them from
  the mail; shas match when one is a prefix of the other (mails give 10 or 12 digits).
  `iolab regressions answer ID RUN` links a run to an entry by hand (another plan, variants
  not named by commit).  Reproduced sets the entry `confirmed`; the other answers keep its
  status.  Each answer is a log line whose evidence is the run, and `details["lab"]` keeps
  them all.
- **A bisect over the range** (`record_bisect`, which `iolab bisect` calls when a bisect of
  a git range ends):
  "found" makes the culprit the entry's `culprit` (what `--format regzbot` prints as
  `#regzbot introduced:`), "range" its `commit_range` (the robot's claim stays in
  `details["commit"]`); "no regression" and "not known" are logged and change nothing else.
  A bisect stopped by its time budget answers with the range it had narrowed to ("not
  known" when it stopped before its ends were shown to differ); it is resumable, and its
  resume's answer replaces that one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from iolab.errors import IolabError
from iolab.model.regression import Regression
from iolab.model.sample import RunInfo
from iolab.store import registry as table
from iolab.store.store import Store

if TYPE_CHECKING:
    from iolab.report.model import Group, Report
    from iolab.stats.types import MetricComparison

ANSWERS = ("reproduced", "not reproduced", "not known")
BISECT_OUTCOMES = ("found", "range", "no regression", "not known")
_SHA = re.compile(r"[0-9a-f]{7,64}")
_FLIP = {"regression": "improvement", "improvement": "regression"}


def same_commit(a: str, b: str) -> bool:
    """Two spellings of one commit: one sha a prefix of the other (at least 7 digits)."""
    a, b = a.strip().lower(), b.strip().lower()
    if not (_SHA.fullmatch(a) and _SHA.fullmatch(b)):
        return False
    return a.startswith(b) or b.startswith(a)


def variant_commits(
    plan_text: str | None, built: Mapping[str, str] | None = None
) -> dict[str, str]:
    """variant name → the commit its kernel names (`kernel: {commit: SHA}`), from a run's
    stored plan; variants named by their sha (a git-range bisect's) count as that sha, and a
    variant whose kernel is a release in `built` (release → the commit built into it) counts
    as that commit."""
    import yaml

    if not plan_text:
        return {}
    try:
        plan = yaml.safe_load(plan_text)
    except yaml.YAMLError:
        return {}
    variants = plan.get("variants") if isinstance(plan, dict) else None
    found: dict[str, str] = {}
    if not isinstance(variants, dict):
        return found
    for name, body in variants.items():
        kernel = body.get("kernel") if isinstance(body, dict) else None
        commit = kernel.get("commit") if isinstance(kernel, dict) else None
        release = kernel.get("release") if isinstance(kernel, dict) else kernel
        if isinstance(commit, str) and _SHA.fullmatch(commit.strip().lower()):
            found[str(name)] = commit.strip().lower()
        elif built and isinstance(release, str) and release in built:
            found[str(name)] = built[release]
        elif _SHA.fullmatch(str(name)):
            found[str(name)] = str(name)
    return found


def run_commits(info: RunInfo) -> dict[str, str]:
    """variant → commit of a stored run.  `ab --kernel-repo` stores its plan with each
    `kernel: {commit: SHA}` turned into the release built from it; the run's record of its
    builds (`kernel_builds`: commit → release) turns them back."""
    from iolab.kernels.artifacts import META

    built: dict[str, str] = {}
    builds = info.meta.get(META)
    if isinstance(builds, Mapping):
        for sha, record in builds.items():
            if isinstance(record, Mapping) and isinstance(record.get("release"), str):
                built[str(record["release"])] = str(sha).lower()
    return variant_commits(info.plan_text, built)


def _imported_ends(entry: Regression) -> tuple[str, str] | None:
    base, commit = entry.details.get("base"), entry.details.get("commit")
    if isinstance(base, str) and isinstance(commit, str) and base and commit:
        return base, commit
    return None


def answer_imported(store: Store, report: Report, run_id: int) -> list[tuple[int, str, str]]:
    """Answer every open or confirmed entry whose (base, commit) are two variants of the
    run (by the commits its plan names): (id, base variant, bad variant) of each answered."""
    commits = run_commits(store.run(run_id))
    if len(commits) < 2:
        return []
    answered = []
    for entry in table.entries(store, ["open", "confirmed"]):
        ends = _imported_ends(entry)
        if ends is None:
            continue
        base = [v for v, c in commits.items() if same_commit(c, ends[0])]
        bad = [v for v, c in commits.items() if same_commit(c, ends[1])]
        if len(base) == 1 and len(bad) == 1 and base != bad:
            answer(store, entry.id, report, run_id, base[0], bad[0])
            answered.append((entry.id, base[0], bad[0]))
    return answered


def _oriented(report: Report, base: str, bad: str) -> list[tuple[Group, MetricComparison, bool]]:
    """Every metric of the groups comparing the two variants, with whether B is `bad`."""
    out = []
    for group in report.groups:
        names = {group.a_name, group.b_name}
        if names != {base, bad}:
            continue
        forward = group.b_name == bad
        out += [(group, m, forward) for m in group.comparison.metrics]
    return out


def _flip_pct(pct: float | None) -> float | None:
    """B against A as a % of A, turned into A against B."""
    if pct is None or pct <= -100.0:
        return None
    return 100.0 * (100.0 / (100.0 + pct) - 1.0)


def _row(m: MetricComparison, forward: bool, cell: dict[str, str]) -> dict[str, Any]:
    change, low, high = m.change_pct, m.ci_low_pct, m.ci_high_pct
    verdict = str(m.verdict)
    if not forward:
        change, low, high = _flip_pct(change), _flip_pct(high), _flip_pct(low)
        verdict = _FLIP.get(verdict, verdict)
    row: dict[str, Any] = {"metric": m.name, "verdict": verdict, "change_pct": change}
    if low is not None and high is not None:
        row["ci_low_pct"], row["ci_high_pct"] = low, high
    if cell:
        row["cell"] = dict(cell)
    return row


def lab_answer(report: Report, base: str, bad: str) -> dict[str, Any]:
    """The answer of one report for the pair (base variant, bad variant): reproduced when a
    KPI of `bad` regressed against `base`; not reproduced when every KPI is within the margin
    or better; else not known.  With the KPI rows and the evidence that moved."""
    from iolab.report.model import is_evidence

    rows = _oriented(report, base, bad)
    kpis = [_row(m, fwd, g.cell) for g, m, fwd in rows if m.kpi]
    moved = [_row(m, fwd, g.cell) for g, m, fwd in rows if is_evidence(m)]
    verdicts = {k["verdict"] for k in kpis}
    if "regression" in verdicts:
        what = "reproduced"
    elif kpis and verdicts <= {"no change", "improvement"}:
        what = "not reproduced"
    else:
        what = "not known"
    return {
        "answer": what,
        "base_variant": base,
        "bad_variant": bad,
        "margin_pct": report.margin_pct,
        "alpha": report.alpha,
        "kpis": kpis,
        "moved": moved,
    }


def _pct(v: Any) -> str:
    return f"{v:+.1f}%" if isinstance(v, int | float) else "n/a"


def answer_note(found: dict[str, Any], run_id: int) -> str:
    """One log line: the answer, the KPI (with its interval: a side at the searched range's
    edge, as a one-sided test's other side always is, shown unbounded) and what moved."""
    from iolab.report.fmt import sequence_ci

    kpis = found["kpis"]
    if found["answer"] == "reproduced":
        shown = [k for k in kpis if k["verdict"] == "regression"]
    else:
        shown = kpis
    parts = []
    for k in shown[:3]:
        ci = f" {sequence_ci(k['ci_low_pct'], k['ci_high_pct'])}" if "ci_low_pct" in k else ""
        parts.append(f"{k['metric']} {_pct(k['change_pct'])}{ci} ({k['verdict']})")
    what = found["answer"]
    if what == "not reproduced":
        what += f" within ±{found['margin_pct']:g}%"
    note = f"lab, run {run_id}: {what}"
    if parts:
        note += ": " + ", ".join(parts)
    moved = found["moved"]
    if moved:
        note += "; moved: " + ", ".join(f"{m['metric']} {_pct(m['change_pct'])}" for m in moved[:6])
        if len(moved) > 6:
            note += f" and {len(moved) - 6} more"
    return note


def answer(
    store: Store, regression_id: int, report: Report, run_id: int, base: str, bad: str
) -> Regression:
    """Record the report's answer for the pair (base, bad) on an entry, linked to the run."""
    entry = table.get(store, regression_id)
    found = {**lab_answer(report, base, bad), "run_id": run_id}
    lab = dict(entry.details.get("lab") or {})
    lab["answers"] = [*lab.get("answers", []), found]
    details = {**entry.details, "lab": lab}
    status = "confirmed" if found["answer"] == "reproduced" and entry.status == "open" else None
    table.record_finding(
        store, regression_id, details, answer_note(found, run_id), run_id, status=status
    )
    return table.get(store, regression_id)


def answer_from_run(store: Store, regression_id: int, run_id: int) -> Regression:
    """`iolab regressions answer ID RUN`: the run's variant report, its two variants taken
    by the entry's commits when the plan names them, else the run's baseline and the other
    variant (a run of exactly two)."""
    from iolab.analysis.build import Options, by_report
    from iolab.analysis.select import Selector

    entry = table.get(store, regression_id)
    info = store.run(run_id)
    variants = store.variants(run_id)
    commits = run_commits(info)
    ends = _imported_ends(entry)
    pair: tuple[str, str] | None = None
    if ends is not None:
        base = [v for v, c in commits.items() if same_commit(c, ends[0])]
        bad = [v for v, c in commits.items() if same_commit(c, ends[1])]
        if len(base) == 1 and len(bad) == 1 and base != bad:
            pair = (base[0], bad[0])
    if pair is None:
        if len(variants) != 2:
            raise IolabError(
                f"run {run_id}: its variants ({', '.join(variants) or 'none'}) do not name "
                f"regression {regression_id}'s commits, and it has not exactly two to take "
                "as base and commit"
            )
        baseline = _baseline(info.plan_text) or variants[0]
        other = [v for v in variants if v != baseline]
        pair = (baseline, other[0])
    options = Options()
    report = by_report(store, Selector(f"run:{run_id}", run_id=run_id), "variant", pair[0], options)
    return answer(store, regression_id, report, run_id, pair[0], pair[1])


def _baseline(plan_text: str | None) -> str | None:
    import yaml

    try:
        plan = yaml.safe_load(plan_text or "")
    except yaml.YAMLError:
        return None
    if isinstance(plan, dict) and isinstance(plan.get("baseline"), str):
        return str(plan["baseline"])
    if isinstance(plan, dict) and isinstance(plan.get("variants"), dict):
        return str(next(iter(plan["variants"]), "")) or None
    return None


def record_bisect(
    store: Store,
    good: str,
    bad: str,
    outcome: str,
    run_id: int | None = None,
    culprit: str | None = None,
    commit_range: str | None = None,
    regression_id: int | None = None,
    note: str | None = None,
) -> list[int]:
    """Record a bisect's result on the entries it answers: `regression_id`, else every open
    or confirmed entry whose base and commit are the bisect's `good` and `bad` ends.

    `outcome` is the bisect's ("found", "range", "no regression", "not known"); `culprit`
    the commit found, `commit_range` ("A..B": A good, B the last commit that may be the
    culprit) for a range.  An answer from a run that answered before (a bisect stopped by
    its time budget, then resumed) replaces that run's earlier one in `details["lab"]`; the
    log keeps both.  Returns the ids recorded on (none matched: an empty list)."""
    if outcome not in BISECT_OUTCOMES:
        raise ValueError(f"outcome {outcome!r} is not one of {BISECT_OUTCOMES}")
    if outcome == "found" and not culprit:
        raise ValueError("a bisect that found a culprit must name it")
    if outcome == "range" and not commit_range:
        raise ValueError("a bisect that ended with a range must give it")
    if regression_id is not None:
        targets: Iterable[Regression] = [table.get(store, regression_id)]
    else:
        targets = [
            e
            for e in table.entries(store, ["open", "confirmed"])
            if (ends := _imported_ends(e)) is not None
            and same_commit(ends[0], good)
            and same_commit(ends[1], bad)
        ]
    ids = []
    for entry in targets:
        found = {
            "outcome": outcome,
            "good": good,
            "bad": bad,
            "run_id": run_id,
            "culprit": culprit,
            "commit_range": commit_range,
        }
        lab = dict(entry.details.get("lab") or {})
        earlier = lab.get("bisects", [])
        if run_id is not None:
            earlier = [b for b in earlier if b.get("run_id") != run_id]
        if note:
            found["note"] = note
        lab["bisects"] = [*earlier, found]
        details = {**entry.details, "lab": lab}
        columns: dict[str, str | None] | None = None
        where = f"bisect {good[:12]}..{bad[:12]}" + (f" (run {run_id})" if run_id else "")
        if outcome == "found":  # a range an earlier, stopped answer of the run set goes
            columns = {"culprit": culprit, "commit_range": None}
            text = f"{where}: found {culprit}"
        elif outcome == "range":
            columns = {"culprit": None, "commit_range": commit_range}
            text = f"{where}: the culprit is in {commit_range}"
        else:
            text = f"{where}: {outcome}"
        if note:
            text += f"; {note}"
        table.record_finding(store, entry.id, details, text, run_id, columns=columns)
        ids.append(entry.id)
    return ids


def answers(entry: Regression) -> Sequence[dict[str, Any]]:
    """The lab's answers recorded on an entry, oldest first."""
    lab = entry.details.get("lab")
    found = lab.get("answers", []) if isinstance(lab, dict) else []
    return [a for a in found if isinstance(a, dict)]
