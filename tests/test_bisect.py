"""The bisection's statistics and search (pure), its plan placeholders and its git layer
(real throwaway repositories).  The lab end of `iolab bisect` is in test_bisect_lab.py."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from iolab.bisect import GOOD, Bisection, Settings, step_alpha
from iolab.bisect.commit_arms import bind
from iolab.bisect.engine import ENDS_TO_FIT
from iolab.bisect.search import ProbabilisticSearch, groups
from iolab.bisect.step import BOTH_BLOCKS, ClassifyStep, StepTest
from iolab.builds import git as bgit
from iolab.errors import EXIT_BAD_INPUT, IolabError, PlanError, RefusedError
from iolab.model.metrics import Direction
from iolab.plan import load_plan
from iolab.plan.fiojob import check_job
from iolab.plan.placeholders import fill_commit, render_workload
from iolab.stats.sequential import _Bettors, one_sided_log_wealth, stake_grid

# ------------------------------------------------------------------ the betting machinery


def test_vectorised_wealth_is_the_ab_bettors_wealth() -> None:
    """The step test reuses the ab test's score and stake mixture: same path, to rounding."""
    rng = np.random.default_rng(3)
    x = rng.normal(0.02, 0.1, 40)
    x[7] = x[3]  # a tie
    stakes = stake_grid(100, 0.05)
    bettors = _Bettors(np.array([0.0]), stakes)
    ups = []
    for v in x:
        bettors.update(float(v))
        ups.append(float(bettors.log_up[0]))
    assert one_sided_log_wealth(x, stakes) == pytest.approx(np.array(ups), rel=1e-12)
    assert one_sided_log_wealth(x[None, :], stakes)[0] == pytest.approx(np.array(ups), rel=1e-12)


def test_step_bettor_is_a_fair_game_over_every_sign_pattern() -> None:
    magnitudes = np.abs(np.random.default_rng(5).normal(0, 0.05, 10))
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=10)))
    final = np.exp(one_sided_log_wealth(signs * magnitudes, stake_grid(40, 0.05))[:, -1])
    assert final.mean() == pytest.approx(1.0, rel=1e-9)


def test_error_budget_of_all_steps_stays_within_alpha() -> None:
    for n in (2, 16, 64, 256, 1000):
        assert sum(step_alpha(0.05, n, s) for s in range(1, 200)) <= 0.05 + 1e-12
    assert step_alpha(0.05, 16, 1) == pytest.approx(0.05 / 5)


def test_step_rarely_grades_a_good_commit_bad() -> None:
    """Under "candidate behaves like good" (drifting noise, a random order per block), a
    step grades it bad at most alpha of the time."""
    rng = np.random.default_rng(9)
    alpha, wrong, reps = 0.05, 0, 600
    for _ in range(reps):
        drift = np.cumsum(rng.normal(0, 0.03, 60))[:, None]
        noise = rng.normal(0, 0.08, (60, 3)) + drift
        levels = np.array([0.0, 0.0, np.log(0.9)])  # good, candidate (good), bad
        rows = np.exp(levels + noise)
        step = StepTest(alpha, 60, worse=-1.0)
        step.feed(np.log(rows))
        wrong += step.verdict == "bad"
    assert wrong / reps <= alpha + 2 * np.sqrt(alpha * (1 - alpha) / reps)


# ----------------------------------------------------------------------------- the engine


def simulate(
    n: int,
    culprit: int | None,
    effect: float = 0.2,
    unbuildable: frozenset[int] = frozenset(),
    search: str = "binary",
    seed: int = 1,
    grade: str = "classify",
) -> Bisection:
    rng = np.random.default_rng(seed)
    b = Bisection(
        Settings(n=n, direction=Direction.HIGHER, margin_pct=10, search=search, grade=grade),  # type: ignore[arg-type]
        track_interval=False,
    )
    while not b.done:
        m = b.action()
        if m is None:  # the request itself ended the bisection (too many steps)
            break
        bad = [i in unbuildable for i in m.arms]
        if any(bad):
            b.unbuildable(m.arms[bad.index(True)])
            continue
        level = [
            1 - effect if culprit is not None and i != GOOD and i >= culprit else 1.0
            for i in m.arms
        ]
        b.feed(np.exp(rng.normal(0, 0.05, (16, len(m.arms)))) * np.array(level))
    return b


@pytest.mark.parametrize(
    ("search", "grade"),
    [("binary", "randomized"), ("probabilistic", "randomized"), ("probabilistic", "classify")],
)
@pytest.mark.parametrize("culprit", [0, 1, 7, 14, 15])
def test_finds_the_culprit(culprit: int, search: str, grade: str) -> None:
    o = simulate(16, culprit, search=search, grade=grade).outcome
    assert o.kind == "found" and o.culprit == culprit, o.reason
    assert o.verify is not None and o.verify.verdict == "regression"
    assert o.verify.a == culprit - 1 and o.verify.b == culprit
    per_step = 3 if grade == "randomized" else 2  # classify: the commit beside one end
    ends = o.ends.blocks if grade == "randomized" else max(o.ends.blocks, ENDS_TO_FIT)  # type: ignore[union-attr]
    assert o.samples == sum(per_step * s.blocks for s in o.steps) + 2 * (o.verify.blocks + ends)


def test_a_classified_step_measures_its_commit_beside_the_good_end() -> None:
    """Block after block and step after step the same end (one boot per kernel for a pair of
    blocks on a host that boots per switch)."""
    b = Bisection(Settings(n=16, direction=Direction.HIGHER), track_interval=False)
    rng = np.random.default_rng(4)
    while b.phase == "ends":
        b.feed(np.exp(rng.normal(0, 0.05, (1, 2))) * np.array([1.0, 0.7]))
    seen = []
    while len(b.records) < 2:
        m = b.action()
        assert m is not None and m.phase == "step" and len(m.arms) == 2
        seen.append(m.arms)
        b.feed(np.exp(rng.normal(0, 0.05, (1, 2))) * np.array([1.0, 1.0]))  # like good
    assert len(seen) >= 3 and {arms[0] for arms in seen} == {GOOD}
    assert seen[0][1] != seen[-1][1]  # two steps, two commits


def _ends(gap: float, spread: float, n: int, rng: np.random.Generator) -> np.ndarray:
    return gap + rng.normal(0, spread, n)


def test_a_classified_step_rarely_grades_a_good_commit_bad() -> None:
    """The noise the ends' blocks showed, a commit like good: graded bad at most about
    alpha of the time (the model holds here; the verification guards when it does not)."""
    rng = np.random.default_rng(11)
    alpha, wrong, decided, reps = 0.05, 0, 0, 800
    for _ in range(reps):
        step = ClassifyStep(alpha, 300, _ends(np.log(1 / 0.9), 0.1, 8, rng))
        while step.verdict is None:
            beside_good = step.end_for(step.blocks) == 0
            end = 0.0 if beside_good else np.log(0.9)
            x = rng.normal(0, 0.1 / np.sqrt(2), 2)
            step.feed_one(end + x[0], x[1], beside_good)
        wrong += step.verdict == "bad"
        decided += step.verdict in ("good", "bad")
    assert decided / reps > 0.9
    assert wrong / reps <= alpha + 2 * np.sqrt(alpha * (1 - alpha) / reps)


def test_a_classified_step_decides_a_large_change_in_a_block_or_two() -> None:
    rng = np.random.default_rng(2)
    blocks = []
    for _ in range(50):
        step = ClassifyStep(0.01, 300, _ends(np.log(1 / 0.65), 0.08, 7, rng))
        while step.verdict is None:
            beside_good = step.end_for(step.blocks) == 0
            end = 0.0 if beside_good else np.log(0.65)
            step.feed_one(
                end + rng.normal(0, 0.06), np.log(0.65) + rng.normal(0, 0.06), beside_good
            )
        assert step.verdict == "bad"
        blocks.append(step.blocks)
    assert np.median(blocks) <= 2 and step.expected_blocks <= 2


def test_a_commit_beyond_both_ends_is_graded_both() -> None:
    rng = np.random.default_rng(6)
    step = ClassifyStep(0.01, 300, _ends(np.log(1 / 0.8), 0.02, 8, rng))
    while step.verdict is None:  # a second change after the culprit, as large as the first
        beside_good = step.end_for(step.blocks) == 0
        end = 0.0 if beside_good else np.log(0.8)
        step.feed_one(end + rng.normal(0, 0.015), np.log(0.64) + rng.normal(0, 0.015), beside_good)
    assert step.verdict == "both"


def test_one_wild_block_does_not_grade_a_step_both() -> None:
    """A bad candidate whose first block ran five times slower or faster (a loaded machine,
    a kernel's slow first boot): the step reaches its grade in its second block with the
    candidate off the prediction, measures on (to BOTH_BLOCKS at most) and grades it "bad";
    a mean over those two blocks graded it "both", which ends a bisect with a range."""
    rng = np.random.default_rng(6)
    for wild in (-1.6, 1.6):
        step = ClassifyStep(0.01, 300, _ends(np.log(1 / 0.8), 0.02, 8, rng))
        while step.verdict is None:
            assert step.end_for(step.blocks) == 0  # beside good: a bad candidate sits at -gap
            noise = wild if step.blocks == 0 else rng.normal(0, 0.015)
            step.feed_one(rng.normal(0, 0.015), np.log(0.8) + noise, True)
        assert step.verdict == "bad" and 2 < step.blocks <= BOTH_BLOCKS, (wild, step.blocks)


def test_an_undecided_step_moves_the_posterior_as_far_as_a_grade_at_most() -> None:
    hard, soft, weak = (ProbabilisticSearch(16, 0.01, 0.025) for _ in range(3))
    hard.record(7, bad=True)
    soft.record_ratio(7, 50.0)  # clipped at a grade's weight
    weak.record_ratio(7, 1.0)
    assert soft.log_post == pytest.approx(hard.log_post)

    def mass(search: ProbabilisticSearch) -> float:  # on "the culprit is at or before 7"
        return float(np.exp(search.log_post[:8]).sum())

    assert 0.5 < mass(weak) < mass(hard)


def test_the_ends_and_the_verification_ask_one_sided_whether_bad_is_worse() -> None:
    """A bisect's question has a direction: its ends' and verification's tests spend no
    evidence on "bad is better", so a large change is shown sooner than by the two-sided
    test on the same blocks."""
    pairs = np.exp(np.random.default_rng(4).normal(0, 0.1, (40, 2))) * np.array([1.0, 0.6])

    def ends_blocks(one_sided: bool) -> tuple[int, str]:
        b = Bisection(
            Settings(
                n=8, direction=Direction.HIGHER, max_blocks=20, sign_bets=True, one_sided=one_sided
            ),
            track_interval=False,
        )
        used = b.feed(pairs)
        assert b.ends_summary is not None
        return min(used, b.ends_summary.blocks), b.ends_summary.verdict

    one, two = ends_blocks(True), ends_blocks(False)
    assert one[1] == two[1] == "regression"
    assert one[0] < two[0]


def test_equal_ends_name_no_culprit() -> None:
    o = simulate(16, None).outcome
    assert o.kind == "no regression" and o.culprit is None and not o.steps
    assert o.ends is not None and o.ends.verdict == "no change"


def test_an_improvement_is_not_bisected_as_a_regression() -> None:
    o = simulate(16, 5, effect=-0.2).outcome
    assert o.kind == "no regression" and "better" in o.reason


@pytest.mark.parametrize("search", ["binary", "probabilistic"])
def test_unbuildable_commit_next_to_the_culprit_gives_a_range(search: str) -> None:
    o = simulate(16, 6, unbuildable=frozenset({5}), search=search).outcome
    assert o.kind == "range" and (o.first, o.last) == (5, 6) and o.unbuildable == (5,)
    assert o.culprit is None and o.verify is not None and o.verify.verdict == "regression"
    assert (o.verify.a, o.verify.b) == (4, 6)


def test_unbuildable_end_is_not_known() -> None:
    o = simulate(16, 6, unbuildable=frozenset({15})).outcome
    assert o.kind == "not known" and "bad end" in o.reason


def test_a_stop_ends_with_a_range_not_a_guess() -> None:
    b = Bisection(Settings(n=64, direction=Direction.LOWER, search="binary"), track_interval=False)
    rng = np.random.default_rng(2)
    b.feed(np.exp(rng.normal(0, 0.02, (40, 2))) * np.array([1.0, 1.5]))  # latency up 50%
    assert b.phase == "step"
    b.stop("time budget spent")
    o = b.outcome
    assert o.kind == "range" and o.culprit is None and (o.first, o.last) == (0, 63)


def test_groups_join_unbuildable_runs_to_the_next_commit() -> None:
    assert groups(6, {1, 2, 4}) == [(0, 0), (1, 3), (4, 5)]
    pba = ProbabilisticSearch(8, p=0.01, stop=0.025)
    assert pba.query() == 3


# ----------------------------------------------------------------------------- placeholders

PLAN = """\
name: b
target: {{size: 16M}}
filesystem: {{type: ext4}}
workload:
{workload}
kpis: [write.iops]
"""


def plan_with(tmp_path: Path, workload: str, extra: str = "") -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(PLAN.format(workload=workload) + extra)
    return str(path)


@pytest.mark.parametrize("command", ["run", "ab"])
def test_commit_placeholders_are_refused_outside_bisect(tmp_path: Path, command: str) -> None:
    """A plan naming {src}/{rev} is a bisect plan: `run` and `ab` refuse it in one line
    before a run exists, instead of failing every sample."""
    plan = plan_with(
        tmp_path,
        '  command:\n    argv: ["{src}/bench", "{mnt}/f"]\n'
        "    metric: {name: write.iops, regex: 'iops (\\d+)'}",
        "variants:\n  a: {}\n  b: {}\n",
    )
    env = dict(os.environ, IOLAB_DB=str(tmp_path / "s.db"), IOLAB_JOURNAL_DIR=str(tmp_path / "j"))
    proc = subprocess.run(
        [sys.executable, "-m", "iolab", command, "-q", plan],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == EXIT_BAD_INPUT, proc.stderr
    assert proc.stderr.count("\n") == 1 and "only under `iolab bisect`" in proc.stderr
    assert not (tmp_path / "s.db").exists()  # refused before any store was opened


def test_commit_placeholders_validate_and_bind(tmp_path: Path) -> None:
    plan = load_plan(
        plan_with(
            tmp_path,
            '  command:\n    argv: ["{src}/bench", "{mnt}/f", "{rev}"]\n'
            "    metric: {name: write.iops, regex: 'iops (\\d+)'}",
        )
    )
    case = bind(plan.cases[0], Path("/t/src"), "a" * 40)
    assert case.workload.argv == ("/t/src/bench", "{mnt}/f", "a" * 40)
    assert case.variant == "a" * 40
    with pytest.raises(KeyError):  # outside a bisect {src} has no value
        render_workload(plan.cases[0].workload, ["/m"], ["/d"], "/w")


def test_job_file_from_the_commit_is_read_per_commit(tmp_path: Path) -> None:
    plan = load_plan(plan_with(tmp_path, '  fio_file: "{src}/jobs/w.fio"'))
    assert plan.cases[0].workload.fio_file == "{src}/jobs/w.fio"
    tree = tmp_path / "tree"
    (tree / "jobs").mkdir(parents=True)
    (tree / "jobs" / "w.fio").write_text("[w]\nfilename={mnt}/f\nsize=1M\nrw=write\n# {rev}\n")
    case = bind(plan.cases[0], tree, "b" * 40)
    assert case.workload.fio_text is not None and case.workload.fio_file is None
    assert "filename={mnt}/f" in case.workload.fio_text and "b" * 40 in case.workload.fio_text
    assert check_job("[w]\nfilename={src}/f\nsize=1M\nrw=write\n") is None


def test_job_file_from_the_commit_takes_the_plans_overrides(tmp_path: Path) -> None:
    """`fio:` overrides beside `fio_file: "{src}/…"` are applied to each commit's job file by
    apply_overrides, as plan loading applies them to any job file it reads."""
    from iolab.plan.fiojob import apply_overrides

    overrides_yaml = 'fio: {directory: "{mnt}", runtime: 1s, rate_iops: null, time_based: ""}\n'
    plan = load_plan(plan_with(tmp_path, '  fio_file: "{src}/w.fio"', overrides_yaml))
    tree = tmp_path / "tree"
    tree.mkdir()
    job = "[global]\ndirectory=/srv/their/disk\nruntime=600\nrate_iops=50\n[w]\nsize=1M\nrw=write\n"
    (tree / "w.fio").write_text(job)
    case = bind(plan.cases[0], tree, "c" * 40)
    overrides = {"directory": "{mnt}", "runtime": "1s", "rate_iops": None, "time_based": ""}
    assert case.workload.fio_text == apply_overrides(job, overrides)
    assert (
        "directory={mnt}" in case.workload.fio_text and "/srv/their" not in case.workload.fio_text
    )
    # the overrides alone are confined when the plan loads
    with pytest.raises(RefusedError, match="leaves the sample"):
        load_plan(plan_with(tmp_path, '  fio_file: "{src}/w.fio"', "fio: {directory: /etc}\n"))


def test_commit_placeholder_mistakes_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match=r"unknown placeholder \{srcdir\}.*src"):
        load_plan(
            plan_with(
                tmp_path,
                '  command:\n    argv: ["{srcdir}/x"]\n    metric: {name: a, regex: "(1)"}',
            )
        )
    with pytest.raises(PlanError, match="'src' cannot be a placeholder name"):
        load_plan(plan_with(tmp_path, '  fio: "[w]\\nrw=write\\nsize=1M\\n"', "vars: {src: x}\n"))
    assert fill_commit("{src}/a {{x}} {mnt} {rev}", "/s", "r") == "/s/a {{x}} {mnt} r"


# ------------------------------------------------------------------------------ git layer


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def test_candidates_follow_first_parent_history(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "a@b")
    _git(repo, "config", "user.name", "A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "base")
    base = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "-b", "side")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "side 1")
    side = _git(repo, "rev-parse", "HEAD")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "main 1")
    _git(repo, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    merge = _git(repo, "rev-parse", "HEAD")
    shas = bgit.candidates(repo, base, merge)
    assert len(shas) == 2 and shas[-1] == merge and side not in shas
    with pytest.raises(IolabError, match="first-parent"):
        bgit.candidates(repo, side, merge)
    with pytest.raises(IolabError, match="not an ancestor"):
        bgit.candidates(repo, merge, base)
    with pytest.raises(IolabError, match="no such commit"):
        bgit.resolve(repo, "nope", "--good")
    assert bgit.describe(repo, merge).subject == "merge side"


# ------------------------------------------------------------------------------ report forms


def test_report_forms_escape_user_text_and_name_the_culprit() -> None:
    import json

    from iolab.model.bisect import Commit
    from iolab.report import bisect_json, bisect_text
    from iolab.report.bisect_model import BisectReport

    o = simulate(16, 9).outcome
    commits = {
        i: Commit(
            f"{i + 1:02d}" * 20, f"fix | thing\x1b[31m {i}", "A <a@b>", "2026-01-02T03:04:05Z"
        )
        for i in range(GOOD, 16)
    }
    r = BisectReport(
        run_id=3, status="finished", kpi="write.iops", direction="higher", alpha=0.05,
        margin_pct=1.0, good=commits[GOOD], bad=commits[15], candidates=16, outcome=o,
        commits=commits, builds={}, evidence=None, cache="/c",
    )  # fmt: skip
    table = bisect_text.render_table(r)
    assert "FOUND" in table and commits[9].sha[:12] in table and "\x1b" not in table
    markdown = bisect_text.render_markdown(r)
    assert "fix \\| thing" in markdown and "\x1b" not in markdown
    data = json.loads(bisect_json.render(r))
    assert data["culprit"]["sha"] == commits[9].sha and data["parent"]["sha"] == commits[8].sha
    assert data["result"] == "found" and len(data["steps"]) == len(o.steps)
    assert data["verification"]["a"] == commits[8].sha and data["range"] == []


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--good", "HEAD~1", "--bad", "HEAD"], "needs --repo, --good and --bad"),
        (["--repo", "{tmp}", "--good", "a", "--bad", "b"], "not a git repository"),
        (["--repo", "{repo}", "--good", "nope", "--bad", "HEAD"], "--good 'nope': no such commit"),
        (["--repo", "{repo}", "--good", "HEAD", "--bad", "HEAD"], "the same commit"),
        (["--repo", "{repo}", "--good", "HEAD", "--bad", "HEAD~1"], "not an ancestor"),
        (["--repo", "{repo}", "--good", "HEAD~1", "--bad", "HEAD", "--build", "'x"], "--build"),
        (["--repo", "{repo}", "--good", "HEAD~1", "--bad", "HEAD", "--max-time", "x"], "duration"),
        (["--repo", "{repo}", "--good", "HEAD~1", "--bad", "HEAD", "--fleet", "f"], "for kernels"),
        (["--repo", "{repo}", "--good", "HEAD~1", "--bad", "HEAD", "more"], "one PLAN"),
    ],
)
def test_bad_bisect_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    from click.testing import CliRunner

    from iolab.cli.main import cli
    from iolab.errors import EXIT_BAD_INPUT

    repo = tmp_path / "r"
    repo.mkdir()
    _git(repo, "init", "-q")
    for n in range(2):
        _git(repo, "-c", "user.email=a@b", "-c", "user.name=A", "commit", "-q", "--allow-empty",
             "-m", f"c{n}")  # fmt: skip
    plan = plan_with(tmp_path, '  fio: "[w]\\nrw=write\\nsize=1M\\nfilename={mnt}/f\\n"')
    argv = [a.format(tmp=tmp_path, repo=repo) for a in args]
    db = str(tmp_path / "s.db")
    result = CliRunner().invoke(cli, ["--db", db, "bisect", plan, *argv])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolab: ") and message in lines[0]
    assert not Path(db).exists()  # refused before any store was opened
    result = CliRunner().invoke(cli, ["--db", db, "bisect", "--resume", "1", "--good", "x"])
    assert result.exit_code == EXIT_BAD_INPUT and "keeps its own" in result.output
