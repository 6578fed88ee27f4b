"""Which QEMU accelerator guests use: KVM when it really runs a guest, else TCG.

An openable /dev/kvm is not enough: on a nested host the device opens and a VM is created, but
the virtual CPU never runs (QEMU waits forever, the kernel prints nothing).  So the first guest
of a boot runs a probe: a 512-byte boot sector that writes to QEMU's isa-debug-exit port, which
ends QEMU with status 3 at once.  KVM is used only when that probe exits so within its time
limit; the answer is kept for the rest of the host's boot (the kernel's boot id names it).

Nor is a KVM without the CPU's virtualization extensions: kvm-pvm (a hypervisor for secure
containers that needs no VT-x or AMD-V) runs only kernels built as its guests.  There the
probe's sector runs, and a Debian kernel boots for a minute and then stops on an instruction
its emulator lacks ("KVM internal error", `lock cmpxchg16b`), with QEMU left paused.  So KVM
is tried only when the vendor module (`kvm_intel` or `kvm_amd`) is loaded or built in.
`$IOLAB_GUEST_ACCEL` (`kvm` or `tcg`) overrides both checks.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
from pathlib import Path

ENV = "IOLAB_GUEST_ACCEL"
CACHE_DIR = Path("/run/iolab")
SYS_MODULE = Path("/sys/module")
# the modules of hardware-assisted KVM; others (kvm_pvm) cannot run the guest image's kernels
VENDOR_MODULES = ("kvm_intel", "kvm_amd")
PROBE_SECONDS = 10.0
_EXIT_PORT = 0xF4
_CACHE_FORM = "v3"  # v1 probed without -cpu host, v2 took kvm-pvm: their answers are not read
_PROBE_STATUS = 3  # isa-debug-exit: (value << 1) | 1 for the value 1 the probe writes


def _boot_sector() -> bytes:
    """mov al,1; out 0xf4,al; hlt; jmp back to hlt: ends QEMU through isa-debug-exit."""
    code = bytes([0xB0, 0x01, 0xE6, _EXIT_PORT, 0xF4, 0xEB, 0xFD])
    return code + bytes(510 - len(code)) + b"\x55\xaa"


def probe_argv(image: Path) -> list[str]:
    return [
        "qemu-system-x86_64",
        "-machine",
        "pc,accel=kvm",
        "-cpu",
        cpu_model("kvm"),
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
        "-device",
        f"isa-debug-exit,iobase={_EXIT_PORT:#x},iosize=0x04",
        "-drive",
        f"file={image},format=raw,if=ide",
    ]


def hardware_kvm(sys_module: Path | None = None) -> bool:
    """True when KVM here is the CPU's own virtualization (VT-x or AMD-V): its vendor module
    is in /sys/module (loaded, or built into the kernel)."""
    root = SYS_MODULE if sys_module is None else sys_module
    return any((root / name).is_dir() for name in VENDOR_MODULES)


def kvm_runs(timeout: float = PROBE_SECONDS) -> bool:
    """True when a KVM guest, with the CPU model guests get, executes its first instructions
    within `timeout` seconds, on hardware-assisted KVM.  (On one nested host the default CPU
    model ran the sector now and then while `-cpu host` aborted in QEMU every time: the probe
    must ask for what guests use.)"""
    if not hardware_kvm():
        return False
    try:
        fd = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return False
    os.close(fd)
    with tempfile.TemporaryDirectory(prefix="iolab-kvm-probe-") as tmp:
        image = Path(tmp) / "probe.img"
        image.write_bytes(_boot_sector())
        try:
            done = subprocess.run(
                probe_argv(image),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False  # run() killed the probe's QEMU on the timeout
    return done.returncode == _PROBE_STATUS


def _boot_id() -> str:
    with contextlib.suppress(OSError):
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return "unknown"


def accelerator(cache_dir: Path = CACHE_DIR) -> str:
    """`kvm` or `tcg`: the override, else this boot's probe result (probed once per boot)."""
    chosen = os.environ.get(ENV, "").strip()
    if chosen:
        return chosen
    cache = cache_dir / f"guest-accel-{_CACHE_FORM}.{_boot_id()}"
    with contextlib.suppress(OSError):
        known = cache.read_text().strip()
        if known in ("kvm", "tcg"):
            return known
    found = "kvm" if kvm_runs() else "tcg"
    with contextlib.suppress(OSError):
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f"{cache.name}.{os.getpid()}")
        tmp.write_text(found + "\n")
        tmp.replace(cache)
    return found


# QEMU's fullest emulated CPU, less the "fast string" features: with ERMS (or FSRM) a kernel
# copies and zeroes memory with `rep movsb`/`rep stosb`, which TCG emulates one byte per step;
# without them it takes `rep movsq`/`rep stosq`, eight bytes a step (docs/guests.md: in-kernel
# copies about 7 times faster)
TCG_CPU = "max,-erms,-fsrm"


def cpu_model(accel: str) -> str:
    """The guest CPU: the host's own under KVM; under TCG, `TCG_CPU`."""
    return "host" if accel == "kvm" else TCG_CPU


def kernel_args(accel: str) -> str:
    """What a guest's kernel command line gains under `accel`.  Under TCG every virtual CPU
    reads the host's own TSC (invariant and synchronised on the host), but the guest cannot
    prove it and falls back to the HPET: then each clock read (fio's, around every I/O) is an
    emulated device access under QEMU's global lock, and one kernel's samples scatter almost
    three times as much (docs/guests.md).  `tsc=reliable` keeps the TSC.  Under KVM,
    kvm-clock is used."""
    return "tsc=reliable" if accel == "tcg" else ""
