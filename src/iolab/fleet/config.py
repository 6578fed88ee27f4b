"""A test host's own configuration: its name, class, designated devices and hooks.

The file is the host's, never the controller's: which devices a block may format is decided
here, so a plan sent over the broker cannot name a disk the host's owner did not give up.
TOML (stdlib `tomllib`), e.g.::

    name = "ssd-01"                  # default: the hostname
    class = "lab"                    # the queue it takes blocks from; default "default"
    devices = ["/dev/nvme1n1"]       # designated devices (none: loop images only), or
                                     # named: [devices] scratch = "/dev/nvme1n1", which a
                                     # plan names as {dev:scratch}
    provides = ["dm-multipath"]      # what this host has that a plan's `requires:` asks for
    destroy_data = false             # may format a designated device holding data
    allow_commands = false           # plans with `command:` workloads are refused
    heartbeat_s = 20                 # lease and host heartbeat interval
    visibility_timeout_s = 43200     # Redis visibility timeout; above the longest block
    kexec = "systemd"                # how a kernel switch ends this system: "systemd"
                                     # (systemctl kexec) or "direct" (the worker
                                     # ended, sync, kexec -e)

    [hooks]                          # argument lists this host runs (iolab.kernels.hooks)
    boot = ["/usr/local/sbin/boot-kernel", "{kernel}"]
    check = ["uname", "-r"]
    install = ["/usr/local/sbin/install-kernel", "{package}"]

The out-of-band power hook is the controller's (its fleet.toml), not the host's.

`$IOLAB_FLEET_HEARTBEAT_S` overrides `heartbeat_s` (the tests use 1-2 s).
"""

from __future__ import annotations

import os
import re
import socket
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iolab.envsettings import env_seconds
from iolab.errors import IolabError
from iolab.kernels.hooks import KEXEC_MODES
from iolab.kernels.hooks import parse as parse_hooks

DEFAULT_HEARTBEAT_S = 20.0
DEFAULT_VISIBILITY_S = 43200.0  # 12 h: above any block iolab accepts on a fleet
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_KEYS = (
    "name",
    "class",
    "devices",
    "provides",
    "destroy_data",
    "allow_commands",
    "heartbeat_s",
    "visibility_timeout_s",
    "kexec",
    "hooks",
)


@dataclass(frozen=True)
class HostConfig:
    name: str
    host_class: str = "default"
    devices: tuple[str, ...] = ()
    destroy_data: bool = False
    allow_commands: bool = False
    heartbeat_s: float = DEFAULT_HEARTBEAT_S
    visibility_timeout_s: float = DEFAULT_VISIBILITY_S
    hooks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    device_names: dict[str, str] = field(default_factory=dict)  # {dev:NAME} -> its path
    provides: tuple[str, ...] = ()
    kexec: str = "systemd"  # iolab.kernels.hooks.default_boot: "systemd" or "direct"


def heartbeat_s(configured: float = DEFAULT_HEARTBEAT_S) -> float:
    """The heartbeat interval: $IOLAB_FLEET_HEARTBEAT_S, else `configured`."""
    return env_seconds("IOLAB_FLEET_HEARTBEAT_S", configured, 0.2, 3600)


def check_name(value: str, what: str) -> str:
    if not _NAME.match(value):
        raise IolabError(f"{what} {value!r}: letters, digits, '.', '_' and '-' only")
    return value


def load(path: str | None, *, name: str | None = None, host_class: str | None = None) -> HostConfig:
    """The host's config from `path` (none: defaults), `--name`/`--class` taking precedence."""
    raw: dict[str, Any] = {}
    where = path or "host config"
    if path is not None:
        try:
            raw = tomllib.loads(Path(path).read_text())
        except OSError as exc:
            raise IolabError(f"{path}: cannot read the host config: {exc.strerror}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise IolabError(f"{path}: not a TOML host config: {exc}") from None
    unknown = sorted(set(raw) - set(_KEYS))
    if unknown:
        raise IolabError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})")
    devices = raw.get("devices", [])
    named: dict[str, str] = {}
    if isinstance(devices, dict):
        named = {check_name(str(k), f"{where}: device name"): v for k, v in devices.items()}
        devices = list(named.values())
    if not isinstance(devices, list) or not all(
        isinstance(d, str) and d.startswith("/dev/") for d in devices
    ):
        raise IolabError(
            f"{where}: devices is a list of /dev/... paths, or a [devices] table of "
            'name = "/dev/..."'
        )
    provides = raw.get("provides", [])
    if not isinstance(provides, list) or not all(
        isinstance(p, str) and p.strip() for p in provides
    ):
        raise IolabError(f'{where}: provides is a list of names, e.g. ["dm-multipath"]')
    hooks = parse_hooks(raw.get("hooks", {}), where)
    flags = {}
    for key in ("destroy_data", "allow_commands"):
        value = raw.get(key, False)
        if not isinstance(value, bool):
            raise IolabError(f"{where}: {key} is true or false")
        flags[key] = value
    numbers = {}
    for key, default in (
        ("heartbeat_s", DEFAULT_HEARTBEAT_S),
        ("visibility_timeout_s", DEFAULT_VISIBILITY_S),
    ):
        value = raw.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
            raise IolabError(f"{where}: {key} is a positive number of seconds")
        numbers[key] = float(value)
    kexec = raw.get("kexec", "systemd")
    if kexec not in KEXEC_MODES:
        raise IolabError(f'{where}: kexec is "systemd" or "direct"')
    chosen_name = name or raw.get("name") or socket.gethostname()
    chosen_class = host_class or raw.get("class") or "default"
    return HostConfig(
        name=check_name(str(chosen_name), "host name"),
        host_class=check_name(str(chosen_class), "host class"),
        devices=tuple(os.path.realpath(d) for d in devices),
        destroy_data=flags["destroy_data"],
        allow_commands=flags["allow_commands"],
        heartbeat_s=heartbeat_s(numbers["heartbeat_s"]),
        visibility_timeout_s=numbers["visibility_timeout_s"],
        hooks=hooks,
        device_names={k: os.path.realpath(v) for k, v in named.items()},
        provides=tuple(sorted({p.strip() for p in provides})),
        kexec=kexec,
    )
