"""Plans that name kernels: the forms (`kernel: R`, `{release, cmdline}`, `cmdline:`, a
`kernel` matrix dimension, `reboot:`), their refusals, and the balanced orders and boot
schedule a worker follows (docs/kernels.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from iolab.errors import PlanError
from iolab.kernels.order import boot_schedule, paired_orders
from iolab.plan import load_plan

BASE = """\
name: kab
repeat: 2
target: {kind: loop, size: 64M}
filesystem: {type: ext4}
workload:
  fio: |
    [w]
    rw=write
    size=1m
kpis: [write.bw_bytes]
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return str(path)


def test_kernel_variants_and_cmdline_additions(tmp_path: Path) -> None:
    plan = load_plan(
        write(
            tmp_path,
            BASE
            + """\
variants:
  old: {kernel: 6.1.0-47-cloud-amd64, cmdline: "mitigations=off"}
  new: {kernel: {release: 6.1.0-50-cloud-amd64, cmdline: "quiet loglevel=3"}}
reboot: per-switch
""",
        )
    )
    old, new = plan.cases
    assert (old.kernel, old.kernel_cmdline) == ("6.1.0-47-cloud-amd64", ("mitigations=off",))
    assert (new.kernel, new.kernel_cmdline) == ("6.1.0-50-cloud-amd64", ("quiet", "loglevel=3"))
    assert plan.reboot == "per-switch" and plan.switches_kernels
    assert plan.needs_worker() is not None and plan.unmeetable() is None


def test_kernel_matrix_dimension(tmp_path: Path) -> None:
    plan = load_plan(
        write(tmp_path, BASE + "matrix:\n  kernel: [6.1.0-47-cloud-amd64, 6.1.0-50-cloud-amd64]\n")
    )
    assert [c.kernel for c in plan.cases] == ["6.1.0-47-cloud-amd64", "6.1.0-50-cloud-amd64"]
    assert plan.reboot == "per-sample"


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("variants:\n  a: {kernel: 'bad release'}\n", "not a kernel release"),
        ("variants:\n  a: {kernel: 6.1.0-1, cmdline: 'x=\"1\"'}\n", "command line word"),
        ("variants:\n  a: {kernel: {cmdline: quiet}}\n", "needs release"),
        ("reboot: sometimes\n", "reboot"),
        ("warmups: -1\n", "warmups"),
        ("warmups: 101\n", "at most 100 warm-up samples"),
        ("warmups: once\n", "warmups"),
    ],
)
def test_bad_kernel_forms_are_one_line(tmp_path: Path, extra: str, needle: str) -> None:
    with pytest.raises(PlanError) as caught:
        load_plan(write(tmp_path, BASE + extra))
    assert needle in caught.value.message and "\n" not in caught.value.message


def test_warmups_default_none_and_a_profile_may_set_them(tmp_path: Path) -> None:
    text = BASE + "variants:\n  a: {kernel: 6.1.0-47-cloud-amd64}\n  b: {}\nreboot: per-switch\n"
    assert load_plan(write(tmp_path, text)).warmups == 0
    text += "warmups: 1\nprofiles:\n  quick: {warmups: 0}\n"
    assert load_plan(write(tmp_path, text)).warmups == 1
    assert load_plan(write(tmp_path, text), "quick").warmups == 0


def test_the_replication_line_counts_the_warmups() -> None:
    from iolab.kernels.design import boot_design
    from iolab.model.sample import Sample

    def sample(boot: str, warmups: int | None) -> Sample:
        s = Sample(run_id=1, provenance={"boot": {"boot_id": boot}})
        if warmups:
            s.provenance["warmups"] = warmups
        return s

    line = boot_design([sample("x", 1), sample("y", 1), sample("y", None)])
    assert line is not None and line.startswith("replication: reboot per switch (3 samples")
    assert line.endswith("; 2 unmeasured warm-up samples before them (the plan's warmups)")
    plain = boot_design([sample("x", None), sample("y", None)])
    assert plain is not None and "warm-up" not in plain


def test_run_without_a_worker_is_refused_exit_2_and_stores_nothing(tmp_path: Path) -> None:
    plan = write(tmp_path, BASE + "variants:\n  a: {kernel: 6.1.0-47-cloud-amd64}\n  b: {}\n")
    db = tmp_path / "store.db"
    for args in (["run", plan], ["ab", plan]):
        proc = subprocess.run(
            [sys.executable, "-m", "iolab", "--db", str(db), *args],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "6.1.0-47-cloud-amd64" in lines[0] and "--fleet" in lines[0]
        assert not db.exists()


def test_requires_stays_refused_exit_3(tmp_path: Path) -> None:
    plan = write(tmp_path, BASE + "requires: {dm-multipath: 2 paths}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "iolab", "--db", str(tmp_path / "s.db"), "run", plan],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 3 and "dm-multipath" in proc.stderr


def test_paired_orders_are_abba_or_baab() -> None:
    seen = set()
    for seed in range(40):
        orders = paired_orders(2, 4, seed)
        assert orders[1] == orders[0][::-1] and orders[3] == orders[2][::-1]
        seen.add(tuple(orders[0] + orders[1]))
    assert seen == {(0, 1, 1, 0), (1, 0, 0, 1)}


def test_boot_schedule_per_sample_and_per_switch(tmp_path: Path) -> None:
    text = (
        BASE
        + "variants:\n  a: {kernel: 6.1.0-47-cloud-amd64}\n  b: {kernel: 6.1.0-50-cloud-amd64}\n"
    )
    plan = load_plan(write(tmp_path, text))
    orders = [[0, 1], [1, 0]]
    every = boot_schedule(plan, orders)
    assert [s.boot for s in every] == [True] * 4
    switch = boot_schedule(plan, orders, reboot="per-switch")
    # a b | b a: the second block starts on the kernel the first ended on
    assert [s.boot for s in switch] == [True, True, False, True]


def _iolab(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iolab", "--db", str(tmp_path / "s.db"), *args],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--kernels", "6.1.0-47-cloud-amd64", "6.1.0-50-cloud-amd64"], "--fleet CLASS"),
        (["--kernels", "6.1.0-47-cloud-amd64", "--fleet", "x"], "at least two releases"),
        (["--kernels", "a b", "c", "--fleet", "x"], "is not a kernel release"),
        (["--kernels", "r1", "r1", "--fleet", "x"], "listed twice"),
        (["--kernels", "r1", "r2", "--fleet", "x"], "PostgreSQL"),
    ],
)
def test_bisect_kernels_refusals(tmp_path: Path, args: list[str], needle: str) -> None:
    plan = write(tmp_path, BASE)
    proc = _iolab(tmp_path, "bisect", plan, *args)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], lines
    assert not (tmp_path / "s.db").exists()


def test_bisect_kernels_from_file_and_the_derived_plan(tmp_path: Path) -> None:
    from iolab.bisect.kernel_plan import kernel_plan
    from iolab.bisect.release_arms import read_list

    listed = tmp_path / "kernels.txt"
    listed.write_text("# oldest first\n6.1.0-47-cloud-amd64\n\n6.1.0-50-cloud-amd64  # new\n")
    releases = read_list(listed)
    assert releases == ["6.1.0-47-cloud-amd64", "6.1.0-50-cloud-amd64"]
    derived = kernel_plan(load_plan(write(tmp_path, BASE)), {r: r for r in releases})
    assert [(c.variant, c.kernel) for c in derived.cases] == [(r, r) for r in releases]
    with pytest.raises(PlanError, match="neither variants nor a kernel"):
        kernel_plan(
            load_plan(write(tmp_path, BASE + "variants: {a: {}, b: {}}\n")),
            {r: r for r in releases},
        )
