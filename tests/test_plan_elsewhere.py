"""Plans whose cases run elsewhere (issue 18): `kernel:` per variant and `requires:`; `iolab
run` refuses them in one line before anything touches the machine."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from iolab.cli.main import cli
from iolab.errors import PlanError
from iolab.plan import load_plan

BASE = """\
name: k
filesystem: ext4
workload:
  dd: [if=/dev/zero, "of={mnt}/f", bs=1M, count=4]
kpis: [write.bw_bytes]
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return str(path)


def test_kernel_per_variant(tmp_path: Path) -> None:
    plan = load_plan(
        write(
            tmp_path,
            BASE
            + "variants:\n"
            + "  base: {kernel: 5.10.162}\n"
            + '  revert: {kernel: {release: 5.10.162-revert, cmdline: "mitigations=off"}}\n',
        )
    )
    assert [(c.key, c.kernel, c.kernel_cmdline) for c in plan.cases] == [
        ("base", "5.10.162", ()),
        ("revert", "5.10.162-revert", ("mitigations=off",)),
    ]
    why = plan.elsewhere()
    assert why is not None and "5.10.162, 5.10.162-revert" in why


def test_requires_is_stated(tmp_path: Path) -> None:
    plan = load_plan(write(tmp_path, BASE + 'requires: {dm-multipath: "2 paths"}\n'))
    assert plan.requires == {"dm-multipath": "2 paths"}
    assert plan.elsewhere() == (
        "the plan requires a target this lab cannot make here "
        "(dm-multipath (2 paths), but a target is loop)"
    )
    stated = load_plan(write(tmp_path, BASE + 'requires: {device-model: "Samsung 980 PRO"}\n'))
    assert stated.elsewhere() == (
        "the plan requires a target this lab cannot make here (device-model: Samsung 980 PRO)"
    )
    assert load_plan(write(tmp_path, BASE + "requires: [md]\n")).requires == {"md": ""}
    assert load_plan(write(tmp_path, BASE)).elsewhere() is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("kernel: 'bad release!'\n", "is not a kernel release"),
        ("kernel: {cmdline: quiet}\n", "needs release:"),
        ("requires: {Multipath: x}\n", "is not a requirement name"),
        ("requires: 3\n", "must map requirement names to text"),
    ],
)
def test_bad_kernel_or_requires(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(PlanError, match=message):
        load_plan(write(tmp_path, BASE + extra))


def test_run_refuses_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, BASE + "requires: [dm-multipath]\n")
    done = CliRunner().invoke(cli, ["--db", str(tmp_path / "s.db"), "run", path])
    assert done.exit_code == 3, done.output
    assert done.stderr.strip().splitlines() == [
        f"iolab: {path}: refusing: the plan requires a target this lab cannot make here "
        "(dm-multipath, but a target is loop)"
    ]
    assert not (tmp_path / "s.db").exists()
