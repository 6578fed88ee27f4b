"""A host's kernel hooks: argument lists from its config, and the built-in kexec default.

Hooks come from the `[hooks]` table of the host's own config (the fleet's host.toml):

    [hooks]
    boot = ["/usr/local/sbin/boot-kernel", "{kernel}", "{cmdline}"]
    check = ["/usr/local/sbin/check-kernel", "{kernel}"]
    install = ["apt-get", "install", "-y", "{package}"]

A host runs these on itself.  The out-of-band power hook is not among them: the controller
runs it, so it comes from the controller's own fleet.toml (iolab.fleet.controller_config),
never from a host or the store.

Placeholders: {kernel} (the release), {cmdline} (the full new command line, one argument),
{additions} (the plan's words, one argument), {vmlinuz}, {initrd} (/boot paths of the
release), {package} (linux-image-{kernel}), and for a kernel built by a git-range bisect
{artifact} (the first built file, fetched from the store: iolab.kernels.artifacts) and
{artifacts} (every built file, one argument each; only as a whole word), e.g.
`install = ["dpkg", "-i", "{artifact}"]`.  Each is one argument: nothing is ever parsed by
a shell.  Without a `boot` hook the host kexecs (`kexec -l`, then `systemctl kexec`, or with
the host's `kexec = "direct"` `sync` and `kexec -e`).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from iolab.errors import IolabError

NAMES = ("boot", "check", "install")
BOOT_DIR = Path("/boot")


@dataclass(frozen=True)
class Target:
    """What to boot: a release, the command line it gets, and the plan's additions."""

    kernel: str
    cmdline: str
    additions: tuple[str, ...] = ()
    artifacts: tuple[str, ...] = ()  # local paths of the release's built files, if any

    @property
    def vmlinuz(self) -> str:
        return str(BOOT_DIR / f"vmlinuz-{self.kernel}")

    @property
    def initrd(self) -> str:
        return str(BOOT_DIR / f"initrd.img-{self.kernel}")

    def values(self) -> dict[str, str]:
        return {
            "kernel": self.kernel,
            "cmdline": self.cmdline,
            "additions": " ".join(self.additions),
            "vmlinuz": self.vmlinuz,
            "initrd": self.initrd,
            "package": f"linux-image-{self.kernel}",
            "artifact": self.artifacts[0] if self.artifacts else "",
        }


ARTIFACT_WORDS = ("{artifact}", "{artifacts}")


def uses_artifacts(argv: Sequence[str]) -> bool:
    """Whether a hook installs built files (so they must be fetched first)."""
    return any(w in word for word in argv for w in ARTIFACT_WORDS)


def expand(argv: Sequence[str], target: Target) -> list[str]:
    """`argv` with placeholders filled, each word on its own (no shell ever sees them)."""
    values = target.values()
    out: list[str] = []
    for word in argv:
        if word == "{artifacts}":
            out.extend(target.artifacts)
            continue
        for key, value in values.items():
            word = word.replace("{" + key + "}", value)
        out.append(word)
    return out


KEXEC_MODES = ("systemd", "direct")


def default_boot(target: Target, kexec: str = "systemd") -> list[list[str]]:
    """kexec: load the release with its initrd and the new command line, then jump into it
    (no firmware, no bootloader).  A release installed without an initrd (a kernel that
    mounts its root by itself, as iolab's guest kernels do) is loaded without one.

    `kexec` says how the running system ends: `systemd` lets systemd stop every service and
    unmount every filesystem first (`systemctl kexec`); `direct` writes every dirty page and
    journal out (`sync`) and jumps (`kexec -e`), as after a power cut with nothing lost: no
    service is stopped, and each filesystem replays its journal at its next mount.  On a
    dedicated test box whose lab is undone from its journal at every start, that is the same
    machine state for a fraction of the time (a TCG guest: 1.7 s instead of 3.9-4.4 s)."""
    initrd = [f"--initrd={target.initrd}"] if Path(target.initrd).exists() else []
    load = ["kexec", "-l", target.vmlinuz, *initrd, f"--command-line={target.cmdline}"]
    if kexec == "direct":
        return [load, ["sync"], ["kexec", "-e"]]
    return [load, ["systemctl", "kexec"]]


def jumps_directly(hooks: Mapping[str, Sequence[str]], kexec: str) -> bool:
    """Whether a switch's boot is the built-in direct jump (`sync`, `kexec -e`): no boot
    hook, and `kexec = "direct"`.  Nothing is stopped on the way, so what must end before
    it (a worker and its connections) is ended by the boot's own shell (`switch.fire`)."""
    return "boot" not in hooks and kexec == "direct"


def boot_commands(
    hooks: Mapping[str, Sequence[str]], target: Target, kexec: str = "systemd"
) -> list[list[str]]:
    argv = hooks.get("boot")
    return [expand(argv, target)] if argv else default_boot(target, kexec)


def parse(table: object, where: str, names: Sequence[str] = NAMES) -> dict[str, tuple[str, ...]]:
    """A `[hooks]`-like table checked: known `names` only, each a non-empty argument list.
    The one check of a hook table (a host's host.toml, `guest up --hooks`, the controller's
    fleet.toml)."""
    if not isinstance(table, dict):
        raise IolabError(f"{where}: [hooks] must be a table of argument lists")
    hooks: dict[str, tuple[str, ...]] = {}
    for name, argv in table.items():
        if name == "power_cycle" and name not in names:
            raise IolabError(
                f"{where}: power_cycle is run by the controller; give it in the controller's "
                "fleet.toml ([hosts.NAME] power_cycle = [...]), not in a host's config"
            )
        if name not in names:
            raise IolabError(f"{where}: unknown hook {name!r}; hooks: {', '.join(names)}")
        if not isinstance(argv, list) or not argv or not all(isinstance(w, str) for w in argv):
            raise IolabError(f"{where}: hooks.{name} must be a non-empty list of strings")
        hooks[name] = tuple(argv)
    return hooks


def load(path: Path | None) -> dict[str, tuple[str, ...]]:
    """The `[hooks]` table of a host config file (None or a missing default: no hooks)."""
    if path is None:
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise IolabError(f"{path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise IolabError(f"{path}: not TOML: {exc}") from None
    return parse(data.get("hooks", {}), str(path))
