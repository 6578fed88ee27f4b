"""`iolab parse --json` with comparison records, `iolab regressions import` of real robot
mails (one entry per headline, none opened twice) on SQLite and PostgreSQL, and the plan an
LKP fio-basic report implies (it loads with iolab's plan loader)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from iolab.cli.main import cli
from iolab.errors import IolabError
from iolab.ingest.comparisons import find_comparisons
from iolab.model.comparison import RobotMail
from iolab.plan import load_plan
from iolab.reproduce.robot import fio_basic_plan, nr_jobs
from iolab.reproduce.robot_tables import robot_plans
from store_backends import BACKENDS, location_for

DATA = Path(__file__).parent / "data"
REPORTS = DATA / "reports"
FIO_TEXT = DATA / "fio-3.33" / "out" / "randwrite-fsync.txt"


@pytest.fixture(params=BACKENDS)
def location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from location_for(request.param, tmp_path)


def iolab(*args: str, db: str | None = None, stdin: str | None = None) -> Result:
    pre = ["--db", db] if db else []
    return CliRunner().invoke(cli, [*pre, *args], input=stdin, env={"COLUMNS": "250"})


def test_parse_json_gives_results_then_comparison_records(tmp_path: Path) -> None:
    mixed = tmp_path / "thread.txt"
    mixed.write_text(
        "Before:\n\n"
        + FIO_TEXT.read_text()
        + "\nAnd mmtests says:\n\n"
        + (REPORTS / "mmtests/2021-hackbench-tbench.txt").read_text()
    )
    out = iolab("parse", "--json", str(mixed))
    assert out.exit_code == 0, out.stderr
    records = json.loads(out.stdout)
    results = [r for r in records if "tool" in r]
    tables = [r for r in records if r.get("kind") == "comparison"]
    assert len(results) == 1 and results[0]["tool"] == "fio" and "kind" not in results[0]
    assert [t["format"] for t in tables] == ["mmtests", "mmtests"]
    assert all("tool" not in t for t in tables)
    row = tables[1]["rows"][5]
    assert row == {
        "metric": "32",
        "base": 8464.34,
        "base_stddev_pct": None,
        "change_pct": 13.16,
        "new": 9578.40,
        "new_stddev_pct": None,
        "significant": True,
        "stat": "Hmean",
        "values": [8464.34, 9578.40],
        "changes_pct": [0.0, 13.16],
        "marks": [False, True],
        "line": row["line"],
    }


def test_parse_a_robot_mail_from_stdin_is_not_an_error() -> None:
    text = (REPORTS / "lkp/2026-btrfs-fio-write-iops.txt").read_text()
    out = iolab("parse", "--json", "-", stdin=text)
    assert out.exit_code == 0, out.stderr
    (table,) = json.loads(out.stdout)
    assert table["kind"] == "comparison" and table["format"] == "lkp"
    assert len(table["rows"]) == 63
    assert table["report"]["headlines"][0]["metric"] == "fio.write_iops"
    assert table["rows"][2] == {
        "metric": "meminfo.Dirty",
        "base": 1215,
        "base_stddev_pct": 3,
        "change_pct": -10.1,
        "new": 1093,
        "new_stddev_pct": 3,
        "line": table["rows"][2]["line"],
    }
    shown = iolab("parse", "-", stdin=text)
    assert shown.exit_code == 0 and "fio.write_iops" in shown.stdout and "63 row(s)" in shown.stdout


def test_parse_nothing_is_one_line_naming_both_kinds(tmp_path: Path) -> None:
    prose = tmp_path / "prose.txt"
    prose.write_text("Hi,\n\nthe numbers look fine to me.\n")
    out = iolab("parse", "--json", str(prose))
    assert out.exit_code == 2 and out.stdout == ""
    (line,) = out.stderr.splitlines()
    assert "no fio, xfs_io or dd result and no comparison table" in line


def test_regressions_import_opens_one_entry_per_headline_once(
    location: str, tmp_path: Path
) -> None:
    stress = str(REPORTS / "lkp/2023-btrfs-stress-ng-quoted.txt")
    first = iolab("regressions", "import", stress, db=location)
    assert first.exit_code == 0, first.stderr
    assert first.stdout.count(" opened: ") == 2
    again = iolab("regressions", "import", stress, db=location)
    assert again.exit_code == 0 and " opened: " not in again.stdout
    assert again.stdout.count("already known") == 2
    # the robot's 2026 mail, then a reply quoting it: one entry, the reply's link added
    mail = (REPORTS / "lkp/2026-btrfs-fio-write-iops.txt").read_text()
    robot = tmp_path / "robot.txt"
    robot.write_text(mail)
    reply = tmp_path / "reply.txt"
    body = mail.split("\n\n", 1)[1]
    reply.write_text(
        "Subject: Re: [btrfs] 4e159150a9: fio.write_iops 6.5% regression\n"
        "Message-ID: <reply-1@example.org>\n\n"
        "On Thu, the robot wrote:\n" + "".join(f"> {line}\n" for line in body.splitlines())
    )
    assert " opened: " in iolab("regressions", "import", str(robot), db=location).stdout
    quoted = iolab("regressions", "import", str(reply), db=location)
    assert quoted.exit_code == 0 and " opened: " not in quoted.stdout, quoted.stdout
    # the same report reached by another address (lore's /r/ form of its Message-ID): known
    forwarded = tmp_path / "forwarded.txt"
    forwarded.write_text(
        "".join(
            line + "\n"
            for line in (REPORTS / "lkp/2023-btrfs-stress-ng-quoted.txt").read_text().splitlines()
            if "Closes:" not in line
        )
    )
    same = iolab("regressions", "import", str(forwarded), db=location)
    assert same.stdout.count("already known") == 2 and " updated: " not in same.stdout
    # the robot reporting the same commit again in another message: the entries get its link
    forwarded.write_text(
        (REPORTS / "lkp/2023-btrfs-stress-ng-quoted.txt")
        .read_text()
        .replace("202309261552.a03eeb4c", "202310031017.b5d1e3f2")
    )
    moved = iolab("regressions", "import", "-", db=location, stdin=forwarded.read_text())
    assert moved.exit_code == 0, moved.stderr
    assert moved.stdout.count(" updated: ") == 2 and " opened: " not in moved.stdout
    again = iolab("regressions", "import", str(forwarded), db=location)
    assert again.stdout.count("already known") == 2
    listed = json.loads(iolab("regressions", "--format", "json", db=location).stdout)
    entries = listed["regressions"]
    assert [(e["metric"], e["change_pct"], e["origin"]) for e in entries] == [
        ("stress-ng.sync-file.ops_per_sec", -44.2, "lkp"),
        ("fio.write_iops", -11.2, "lkp"),
        ("fio.write_iops", -6.5, "lkp"),
    ]
    assert entries[2]["culprit"] == "4e159150a9a56d66d247f4b5510bed46fe58aa1c"
    assert entries[1]["case"]["parameters"]["ioengine"] == "ftruncate"
    assert entries[1]["case"]["testcase"] == "fio-basic"
    assert entries[0]["case"]["test_machine"].startswith("36 threads 1 sockets")
    assert [e["note"] for e in entries[0]["log"]] == [
        "imported from https://lore.kernel.org/oe-lkp/202309261552.a03eeb4c-oliver.sang@intel.com",
        "reported again: https://lore.kernel.org/oe-lkp/202310031017.b5d1e3f2-oliver.sang@intel.com",
    ]
    regzbot = iolab("regressions", "--format", "regzbot", db=location).stdout
    assert regzbot.splitlines()[:3] == [
        "#regzbot introduced: 6c9131ed0d644324adeeaccd2feeef8d04950b2d",
        "#regzbot title: stress-ng.sync-file.ops_per_sec -44.2% regression (stress-ng)",
        "#regzbot link: https://lore.kernel.org/oe-lkp/202309261552.a03eeb4c-oliver.sang@intel.com",
    ]


def test_regressions_import_refuses_what_is_not_a_robot_report(tmp_path: Path) -> None:
    db = str(tmp_path / "r.db")
    out = iolab("regressions", "import", str(REPORTS / "mmtests/2021-reaim-quoted.txt"), db=db)
    assert out.exit_code == 2
    (line,) = out.stderr.splitlines()
    assert "no 0-day/LKP robot report" in line


# --- the plan a fio-basic report implies ----------------------------------------------------


def _fio_set(name: str, index: int = 0) -> tuple[dict[str, str], str | None, str | None]:
    path = REPORTS / name
    table = find_comparisons(path.read_text(), str(path))[index]
    assert table.robot is not None
    (head,) = [h for h in table.robot.headlines if h.testcase == "fio-basic"]
    return dict(table.dimensions), head.machine, head.metric


@pytest.mark.parametrize(
    ("name", "index", "jobs", "engine", "rw", "kpi"),
    [
        ("lkp/2026-btrfs-fio-write-iops.txt", 0, 1, "pvsync2", "write", "write.iops"),
        ("lkp/2019-btrfs-fio-quoted-rewrapped.txt", 0, 36, "libaio", "randwrite", "write.bw_bytes"),
        ("lkp/2023-btrfs-stress-ng-quoted.txt", 1, 64, "ftruncate", "write", "write.iops"),
    ],
)
def test_fio_basic_plan_loads_with_the_robots_options(
    tmp_path: Path, name: str, index: int, jobs: int, engine: str, rw: str, kpi: str
) -> None:
    params, machine, metric = _fio_set(name, index)
    robot = RobotMail(commit="c0ffee1234", base="badbad1234", subject="fix", base_subject="base")
    plan = fio_basic_plan(params, machine=machine, metric=metric, robot=robot)
    path = tmp_path / "plan.yaml"
    path.write_text(plan.text)
    loaded = load_plan(str(path))
    quick = load_plan(str(path), "quick")
    # the robot's base and commit: two kernel variants by commit, their subjects beside them
    base, commit = loaded.cases
    assert (base.variant, base.kernel_commit) == ("base", "badbad1234")
    assert (commit.variant, commit.kernel_commit) == ("commit", "c0ffee1234")
    assert '# commit: c0ffee1234 ("fix")' in plan.text
    assert [(c.variant, c.kernel_commit) for c in quick.cases] == [(None, None)]
    case = base
    assert case.filesystem is not None and case.filesystem.type == "btrfs"
    job = case.workload.fio_text
    assert job is not None
    # 128G/100G do not fit a loop image in RAM: the target's largest, the sizes scaled to it
    size = int(re.search(r"^size=(\d+)M$", job, re.M).group(1)) << 20  # type: ignore[union-attr]
    assert size * jobs <= case.target.size_bytes
    for option in (f"bs={params['bs']}", f"ioengine={engine}", f"rw={rw}", f"numjobs={jobs}",
                   "directory=", "iodepth=32", "direct=0"):  # fmt: skip
        assert option in job, (option, job)
    assert [k.metric for k in loaded.kpis] == [kpi]
    assert quick.repeat == 3 and loaded.repeat == 10
    assert any("SCALED" in n for n in plan.notes) and "SCALED" in plan.text
    assert (
        any("disk:" in n for n in plan.notes) and "# NOTE: not reproduced here: disk" in plan.text
    )
    assert ("time_based" in job) == ("time_based" in params)


def test_fio_basic_plan_refuses_what_it_cannot_map() -> None:
    with pytest.raises(IolabError, match="only fio-basic"):
        fio_basic_plan({"testcase": "stress-ng", "test_size": "1G"})
    with pytest.raises(IolabError, match="iolab makes"):
        fio_basic_plan({"fs": "f2fs", "test_size": "1G"})
    with pytest.raises(IolabError, match="thread count"):
        fio_basic_plan({"nr_task": "50%", "test_size": "1G"})
    with pytest.raises(IolabError, match="not a plain value"):  # never a fio option of its own
        fio_basic_plan({"bs": "4k exec_prerun=touch /tmp/x", "test_size": "1G"})
    assert nr_jobs("100%", "8 threads 1 sockets") == (
        8,
        "nr_task: 100% of the test machine's 8 threads",
    )
    small = fio_basic_plan({"fs": "xfs", "test_size": "256M", "rw": "read"})
    assert (
        small.notes == [] and "size=268435456" in small.text and "kpis: [read.iops]" in small.text
    )
    assert nr_jobs("8t", None) == (8, "nr_task: 8t (tasks)")  # jobs/fio-basic/*-read.yaml
    with pytest.raises(IolabError, match=r"expected a count \(8, 8t\) or a share"):
        nr_jobs("eight", None)


def test_robot_plans_one_per_fio_basic_parameter_set(tmp_path: Path) -> None:
    def plans(name: str) -> list[str]:
        path = REPORTS / name
        return [p.text for p in robot_plans(find_comparisons(path.read_text(), str(path)))]

    (mixed,) = plans("lkp/2023-btrfs-stress-ng-quoted.txt")  # stress-ng set: no plan
    assert "ioengine=ftruncate" in mixed and "numjobs=64" in mixed
    assert "# report: https://lore.kernel.org/oe-lkp/202309261552.a03eeb4c" in mixed
    assert plans("mmtests/2021-reaim-quoted.txt") == []
    (one,) = plans("lkp/2026-btrfs-fio-write-iops.txt")
    path = tmp_path / "p.yaml"
    path.write_text(one)
    assert load_plan(str(path), "quick").repeat == 3


def test_an_improvement_headline_is_skipped_not_entered(tmp_path: Path) -> None:
    text = (REPORTS / "lkp/2026-btrfs-fio-write-iops.txt").read_text()
    better = tmp_path / "improvement.txt"
    # the same mail, as the robot words an improvement
    better.write_text(text.replace("6.5% regression", "6.5% improvement"))
    db = str(tmp_path / "r.db")
    out = iolab("regressions", "import", str(better), db=db)
    assert out.exit_code == 0, out.stderr
    assert out.stdout.strip() == "skipped: fio.write_iops -6.5% is an improvement"
    assert iolab("regressions", db=db).stdout == "no regressions\n"
