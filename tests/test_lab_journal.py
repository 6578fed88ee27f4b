"""The change journal: undo order, scopes, cleanup after a killed owner, block orders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from iolab.lab import journal as jr
from iolab.lab.runner import shuffled_block_order


def test_undo_runs_newest_first_and_removes_the_file(tmp_path: Path) -> None:
    target = tmp_path / "setting"
    target.write_text("original")
    j = jr.Journal.open(tmp_path / "journal")
    j.record("write", path=str(target), value="original")
    target.write_text("first change")
    j.record("write", path=str(target), value="first change")
    target.write_text("second change")
    assert j.undo_all() == []
    assert target.read_text() == "original"  # reversed: the first change's undo ran last
    j.close()
    assert not j.path.exists()


def test_every_line_is_on_disk_before_the_change(tmp_path: Path) -> None:
    j = jr.Journal.open(tmp_path)
    j.record("rmdir", path=str(tmp_path / "x"))
    lines = [json.loads(line) for line in j.path.read_text().splitlines()]
    assert lines[0]["op"] == "open" and lines[0]["pid"] == os.getpid()
    assert lines[1] == {
        "op": "change",
        "id": 1,
        "kind": "rmdir",
        "undo": {"path": str(tmp_path / "x")},
    }
    j.close()


def test_scope_undoes_only_its_own_changes_even_on_error(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "inner"
    j = jr.Journal.open(tmp_path / "j")
    j.record("rmdir", path=str(outer))
    outer.mkdir()
    with pytest.raises(RuntimeError), j.scope():
        j.record("rmdir", path=str(inner))
        inner.mkdir()
        raise RuntimeError("workload crashed")
    assert outer.exists() and not inner.exists()
    j.close()
    assert not outer.exists()


def test_unknown_undo_action_is_refused(tmp_path: Path) -> None:
    j = jr.Journal.open(tmp_path)
    with pytest.raises(ValueError):
        j.record("format-disk", path="/dev/sda")
    j.close()


def test_cleanup_undoes_what_a_killed_process_left(tmp_path: Path) -> None:
    """A real process journals a change, makes it, and dies without undoing it."""
    directory = tmp_path / "journals"
    setting = tmp_path / "setting"
    setting.write_text("before")
    script = textwrap.dedent(
        f"""
        import os
        from pathlib import Path
        from iolab.lab.journal import Journal
        j = Journal.open(Path({str(directory)!r}))
        j.record("write", path={str(setting)!r}, value="before")
        Path({str(setting)!r}).write_text("changed")
        os._exit(9)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], check=False)
    assert proc.returncode == 9
    assert setting.read_text() == "changed"
    (left,) = jr.leftovers(directory)
    assert not left.owner_alive and len(left.pending) == 1
    assert jr.cleanup_leftover(left) == []
    assert setting.read_text() == "before"
    assert jr.leftovers(directory) == []


def test_a_running_owner_is_recognised(tmp_path: Path) -> None:
    j = jr.Journal.open(tmp_path)
    (left,) = jr.leftovers(tmp_path)
    assert left.owner_alive  # this test process
    j.close()


def test_torn_last_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "iolab-1-1.jsonl"
    path.write_text('{"op": "open", "pid": 1, "start": 1}\n{"op": "change", "id": 1, "ki')
    left = jr.read_journal(path)
    assert left.entries == []


def test_block_orders_repeat_for_the_same_seed_and_differ_between_blocks() -> None:
    orders = [shuffled_block_order(42, block, 6) for block in range(1, 21)]
    assert orders == [shuffled_block_order(42, block, 6) for block in range(1, 21)]
    assert all(sorted(order) == list(range(6)) for order in orders)
    assert len({tuple(order) for order in orders}) > 10
    assert (
        shuffled_block_order(43, 1, 6) != shuffled_block_order(42, 1, 6)
        or shuffled_block_order(43, 2, 6) != orders[1]
    )


def test_ext_mkfs_writes_inode_tables_up_front_unless_the_plan_says_otherwise() -> None:
    from iolab.lab.filesystem import EAGER_INIT, effective_mkfs_options

    assert effective_mkfs_options("ext4", ["-m", "1"]) == ["-m", "1", "-E", EAGER_INIT]
    # mke2fs keeps only the last -E, so an existing one is extended, not followed by another
    assert effective_mkfs_options("ext4", ["-E", "stride=8"]) == ["-E", f"stride=8,{EAGER_INIT}"]
    assert effective_mkfs_options("ext4", ["-Estride=8"]) == [f"-Estride=8,{EAGER_INIT}"]
    explicit = ["-E", "lazy_itable_init=1"]
    assert effective_mkfs_options("ext4", explicit) == explicit
    assert effective_mkfs_options("xfs", ["-b", "size=4096"]) == ["-b", "size=4096"]


def _imported(module: Path) -> set[str]:
    """Every iolab module `module` imports, at the top or inside a function."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("iolab"):
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.startswith("iolab"))
    return names


def test_the_journal_names_no_device_module_and_the_lab_has_no_import_circle() -> None:
    import iolab.lab

    lab = Path(iolab.lab.__file__).parent
    graph = {f"iolab.lab.{p.stem}": _imported(p) for p in lab.glob("*.py") if p.stem != "__init__"}
    devices = {"iolab.lab.md", "iolab.lab.multipath", "iolab.lab.nullblk", "iolab.lab.modules"}
    assert not graph["iolab.lab.journal"] & devices
    # the undo table knows the device modules; they only know the ChangeJournal protocol
    assert devices <= graph["iolab.lab.undo"]
    for device in devices:
        assert not graph[device] & {"iolab.lab.journal", "iolab.lab.undo"}, device

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for name in graph.get(todo.pop(), set()) & graph.keys():
                if name not in seen:
                    seen.add(name)
                    todo.append(name)
        return seen

    circles = sorted(name for name in graph if name in reach(name))
    assert circles == []


def test_every_undo_action_a_device_module_records_is_in_the_table() -> None:
    import re

    import iolab
    from iolab.lab.undo import UNDO_ACTIONS

    src = Path(iolab.__file__).parent
    recorded = {
        kind
        for p in src.rglob("*.py")
        for kind in re.findall(r"journal\.record\(\s*\"(\w+)\"", p.read_text())
    }
    assert {"mdstop", "dmremove", "nullb", "rmmod", "write", "killpg"} <= recorded
    assert recorded <= UNDO_ACTIONS.keys()
    with pytest.raises(ValueError, match="unknown undo action"):
        jr.Journal(Path("/nonexistent")).record("reboot", host="x")


def test_a_zombie_is_not_alive_and_a_reused_pid_is_not_its_owner() -> None:
    from iolab.procs import process_alive, process_start

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start(child.pid)
    assert start is not None
    for _ in range(200):  # exited, not yet reaped: a zombie
        if not process_alive(child.pid, start):
            break
        import time

        time.sleep(0.05)
    assert not process_alive(child.pid, start)
    assert process_start(child.pid) == start  # still in /proc, waiting for its parent
    child.wait()
    me = os.getpid()
    assert process_alive(me) and process_alive(me, process_start(me))
    assert not process_alive(me, (process_start(me) or 0) + 1)
