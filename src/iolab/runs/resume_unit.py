"""The systemd unit that carries a one-box run across its boots (`iolab ab PLAN --here`).

On one test box the process that asked for a kernel does not survive the kexec it starts, so
the run is continued at boot, as LKP runs its job at boot: `iolab-resume-RUN.service` runs
the run's own `--resume` command (`iolab ab --resume RUN --here`) once per boot, its output
in the journal (`journalctl -u iolab-resume-RUN`).  It is installed before the first block
and removed when the run ends, whatever the end (finished, failed, interrupted, `iolab
cancel RUN`); only a run leaving for a boot keeps it.

The unit is enabled the way `systemctl enable` does for `WantedBy=multi-user.target` (a
link in `multi-user.target.wants/`), written here rather than asked of systemctl so that the
same code writes it on a box and in a test directory (`$IOLAB_SYSTEMD_DIR`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from iolab.errors import IolabError

WANTED_BY = "multi-user.target"
DEFAULT_DIR = Path("/etc/systemd/system")
# the settings a resumed run must see as the first process did
PASSED_ENV = ("IOLAB_HOST_CONFIG", "IOLAB_KERNEL_STATE", "IOLAB_DB_WAIT_S")


def unit_dir() -> Path:
    """$IOLAB_SYSTEMD_DIR, else /etc/systemd/system."""
    return Path(os.environ.get("IOLAB_SYSTEMD_DIR") or DEFAULT_DIR)


def name(run_id: int) -> str:
    return f"iolab-resume-{run_id}.service"


def continues(run_id: int, what: str) -> str:
    """The line a process says as it leaves its run to the unit (`what`: why it left)."""
    unit = name(run_id)
    return f"{what}; {unit} continues the run after the boot (journalctl -u {unit})"


def check_possible() -> None:
    """Refuse `--here` where nothing would start the run again after a boot."""
    if "IOLAB_SYSTEMD_DIR" in os.environ:
        return
    if not Path("/run/systemd/system").is_dir():
        raise IolabError(
            "--here continues the run after each boot with a systemd unit; "
            "this machine does not run systemd"
        )


def executable() -> str:
    """How the unit calls iolab: the `iolab` on PATH, else the one beside this Python."""
    return shutil.which("iolab") or f"{sys.prefix}/bin/iolab"


def text(run_id: int, argv: Sequence[str], mounts: Sequence[str] = ()) -> str:
    """The unit for run `run_id`, running `argv` (the run's resume command) at boot.
    `mounts`: paths it needs (the store, the plan, iolab itself) — it waits for their
    filesystems, which a box may mount late (`nofail`)."""
    env = [f"Environment={_word(f'{k}={os.environ[k]}')}" for k in PASSED_ENV if os.environ.get(k)]
    needs = " ".join(sorted({_word(m) for m in mounts}))
    lines = [
        "[Unit]",
        f"Description=iolab: continue run {run_id} on this box after its kernel switch",
        '# what it is: iolab\'s docs/kernels.md, "One test box"',
        "After=local-fs.target",
        *([f"RequiresMountsFor={needs}"] if needs else []),
        "",
        "[Service]",
        "Type=exec",
        "User=root",
        # a sample cut by a power loss left the journal of what it changed
        f"ExecStartPre=-{_word(argv[0])} cleanup",
        "ExecStart=" + " ".join(_word(a) for a in argv),
        *env,
        "StandardOutput=journal",
        "StandardError=journal",
        # the run's own Ctrl-C path: SIGTERM restores the machine, the run ends interrupted
        "KillSignal=SIGTERM",
        "TimeoutStopSec=infinity",
        # `iolab cleanup` first may undo a killed sample's md arrays and mounts: no limit
        "TimeoutStartSec=infinity",
        "",
        "[Install]",
        f"WantedBy={WANTED_BY}",
        "",
    ]
    return "\n".join(lines)


def _word(value: str) -> str:
    """One word of a unit line: quoted, and systemd's specifiers (`%`) and variables (`$`)
    taken literally."""
    return shlex.quote(value).replace("%", "%%").replace("$", "$$")


def install(run_id: int, argv: Sequence[str], mounts: Sequence[str] = ()) -> Path:
    """Write and enable the unit (idempotent); its path."""
    directory = unit_dir()
    wants = directory / f"{WANTED_BY}.wants"
    try:
        wants.mkdir(parents=True, exist_ok=True)
        path = directory / name(run_id)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text(run_id, argv, mounts))
        # a store URL may carry a password: then the unit is root's to read only
        tmp.chmod(0o600 if any("://" in a for a in argv) else 0o644)
        tmp.replace(path)
        link = wants / name(run_id)
        if not link.is_symlink():
            link.symlink_to(path)
    except OSError as exc:
        raise IolabError(f"{directory}: cannot install the resume unit: {exc.strerror}") from None
    _reload(directory)
    return path


def installed(run_id: int) -> bool:
    return (unit_dir() / name(run_id)).exists()


def remove(run_id: int) -> bool:
    """Disable and remove run `run_id`'s unit; whether there was one."""
    directory = unit_dir()
    path = directory / name(run_id)
    link = directory / f"{WANTED_BY}.wants" / name(run_id)
    had = path.exists() or link.is_symlink()
    link.unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    if had:
        _reload(directory)
    return had


def _reload(directory: Path) -> None:
    """Tell a running systemd about the change (the next boot reads the files anyway)."""
    if directory != DEFAULT_DIR or not Path("/run/systemd/system").is_dir():
        return
    subprocess.run(["systemctl", "daemon-reload"], capture_output=True, check=False, timeout=120)
