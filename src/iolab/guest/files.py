"""The files iolab adds to the guest's root: the run and service units and their scripts.

The guest finds what to do on a small read-only disk labelled IOLABCMD (made per guest by
`guest.disks`) and the iolab source on one labelled IOLABSRC, mounted at /opt/iolab/src and
put on the venv's path by a .pth file.  The kernel command line picks the mode:

- `iolab.mode=run`: `iolab-guest-run.service` runs the disk's `script` once per boot, its
  output and exit status on the virtio port `iolab.out`, then powers off (unless the script
  touched `$IOLAB_STAY`: it is switching kernels and runs again after the next boot);
- `iolab.mode=service`: `iolab-guest-service.service` runs the disk's `service` script with
  `env` as its environment, restarted whenever it stops: a fleet host's worker.
"""

from __future__ import annotations

import hashlib
import textwrap

MARK = "IOLAB"  # the run script's markers: IOLAB-BOOT-<nonce>, IOLAB-EXIT-<nonce>, ...

# Neither script waits for udev: under emulation its coldplug (a modprobe per device) ends
# seconds after the disks and the port exist, and the worker's Python start (~20 s) would
# begin only then.  The disks are found by their serials in sysfs, the port there too.
_MOUNT = """\
#!/bin/sh
# Mounts the command disk (label IOLABCMD) at /run/iolab-cmd and the iolab source (IOLABSRC)
# at /opt/iolab/src, read-only.  Under emulation every process is a fraction of a second of
# the boot, so the disks are found by their serial (iolab gives each its label as serial)
# with the shell's own reads, else by one `blkid` (no cache file: a fresh probe of every
# virtio disk), and both are mounted by one `mount`.
set -u
mounted() {
  while read -r _dev at _rest; do [ "$at" = "$1" ] && return 0; done </proc/self/mounts
  return 1
}
found() {
  case "$1" in IOLABCMD) cmd="$2" ;; IOLABSRC) src="$2" ;; esac
}
cmd=""
src=""
tries=0
while [ "$tries" -lt 300 ]; do
  for serial in /sys/block/vd*/serial; do
    [ -r "$serial" ] || continue
    value=""
    read -r value <"$serial"  # no newline at its end: read says so, and sets it all the same
    dev=${serial%/serial}
    found "$value" "/dev/${dev##*/}"
  done
  [ -n "$cmd" ] && [ -n "$src" ] && break
  if [ "$tries" -ge 5 ]; then  # disks without iolab's serials: their labels
    dev=""
    while IFS="=" read -r key value; do
      case "$key" in DEVNAME) dev="$value" ;; LABEL) found "$value" "$dev" ;; esac
    done <<EOF
$(blkid -c /dev/null -s LABEL -o export /dev/vd[a-z] 2>/dev/null)
EOF
    [ -n "$cmd" ] && [ -n "$src" ] && break
  fi
  tries=$((tries + 1))
  sleep 0.2
done
fstab=/run/iolab-guest.fstab
: >"$fstab"
if [ -n "$cmd" ] && ! mounted /run/iolab-cmd; then
  echo "$cmd /run/iolab-cmd ext4 ro,X-mount.mkdir 0 0" >>"$fstab"
fi
if [ -n "$src" ] && ! mounted /opt/iolab/src; then
  echo "$src /opt/iolab/src ext4 ro,X-mount.mkdir 0 0" >>"$fstab"
fi
[ -s "$fstab" ] && mount -a -T "$fstab"
mounted /run/iolab-cmd || exit 1
mounted /opt/iolab/src || echo "iolab: no iolab source disk (IOLABSRC)" >&2
exit 0
"""

# Sets `dev` to the virtio port iolab.out's device when sysfs has it (else empty), with the
# shell's own reads: the port script below, and the service's script before it (hosts.py).
PORT_IN_SYSFS = """\
dev=""
for name in /sys/class/virtio-ports/*/name; do
  [ -r "$name" ] && read -r value <"$name" && [ "$value" = iolab.out ] || continue
  dir=${name%/name}
  dev=/dev/${dir##*/}
done
"""

# Prints the virtio port iolab.out's device, waiting for it (1 if it never comes): its
# driver loaded now rather than by udev's coldplug (unless loaded already), the port found
# in sysfs.
_PORT = (
    """\
#!/bin/sh
[ -d /sys/class/virtio-ports ] || modprobe -q virtio_console 2>/dev/null
tries=0
while [ "$tries" -lt 300 ]; do
"""
    + textwrap.indent(PORT_IN_SYSFS, "  ")
    + """\
  [ -c "$dev" ] && echo "$dev" && exit 0
  [ -e /dev/virtio-ports/iolab.out ] && echo /dev/virtio-ports/iolab.out && exit 0
  tries=$((tries + 1))
  sleep 0.2
done
exit 1
"""
)
MOUNT = "/usr/local/sbin/iolab-guest-mount"
PORT = "/usr/local/sbin/iolab-guest-port"

_RUN_UNIT = """\
[Unit]
Description=iolab: run the command disk's script, then power off
ConditionKernelCommandLine=iolab.mode=run
After=local-fs.target systemd-udevd.service
Wants=systemd-udevd.service

[Service]
Type=oneshot
ExecStartPre=/usr/local/sbin/iolab-guest-mount
ExecStart=/bin/bash /run/iolab-cmd/boot
TimeoutStartSec=infinity
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
"""

# Started as soon as systemd starts units, beside the rest of its start-up rather than after
# it: the worker's Python start and imports take seconds under emulation, and it needs the
# network only once they are done (the store is waited for).  Not even after local-fs.target
# (3 s into a TCG boot): the kernel mounted the root read-write (`rw` on the command line
# every boot and kexec keeps), and the unit mounts its own two disks.  At `Nice=-10` its
# start wins the two CPUs from the rest of the boot; the worker sets itself back to 0 once
# ready, before it measures anything (iolab.fleet.service.default_priority).
_SERVICE_UNIT = """\
[Unit]
Description=iolab: the guest's service (a fleet worker), from the command disk
ConditionKernelCommandLine=iolab.mode=service
DefaultDependencies=no
After=systemd-journald.socket
Wants=systemd-networkd.service systemd-udevd.service
Conflicts=shutdown.target
Before=shutdown.target

[Service]
ExecStartPre=/usr/local/sbin/iolab-guest-mount
EnvironmentFile=-/run/iolab-cmd/env
Environment=HOME=/root PYTHONDONTWRITEBYTECODE=1
Environment=PATH=/opt/iolab/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
ExecStart=/bin/bash /run/iolab-cmd/service
Nice=-10
KillSignal=SIGTERM
TimeoutStopSec=60
Restart=always
RestartSec=3

[Install]
WantedBy=multi-user.target
"""

_NETWORK = """\
[Match]
Type=ether

[Network]
DHCP=ipv4
LinkLocalAddressing=no
IPv6AcceptRA=no
"""

# the iolab source is mounted by the units' ExecStartPre (iolab-guest-mount), not here
_FSTAB = """\
/dev/vda / ext4 rw,errors=remount-ro 0 1
"""

# A small initrd (only what mounts a virtio root) boots faster under TCG than MODULES=most.
_INITRAMFS_CONF = "MODULES=list\n"
_INITRAMFS_HOOK = """\
#!/bin/sh
# iolab guest: the modules that mount the root disk, for MODULES=list
[ "$1" = prereqs ] && exit 0
. /usr/share/initramfs-tools/hook-functions
manual_add_modules virtio_pci virtio_blk ext4
"""

# A kernel that mounts the guest's root by itself (virtio_blk, virtio_pci and ext4 built
# in, as the kernels iolab's guest config builds) boots without an initramfs: making one is
# ~50 s of every `dpkg -i` under emulation.  Debian's own hook, diverted, does the rest.
_INITRAMFS_POSTINST = """\
#!/bin/sh
# iolab guest: no initramfs for a kernel that mounts the root by itself
config="/boot/config-$1"
if [ -n "$1" ] && [ -r "$config" ] \\
    && grep -qx CONFIG_VIRTIO_BLK=y "$config" && grep -qx CONFIG_VIRTIO_PCI=y "$config" \\
    && grep -qx CONFIG_EXT4_FS=y "$config"; then
  echo "iolab guest: $1 mounts the root by itself; no initramfs" >&2
  exit 0
fi
exec /etc/kernel/postinst.d/initramfs-tools.distrib "$@"
"""
INITRAMFS_POSTINST = "/etc/kernel/postinst.d/initramfs-tools"
INITRAMFS_POSTINST_WRAPPER = "/usr/local/sbin/iolab-guest-initramfs"

_IOLAB = """\
#!/opt/iolab/venv/bin/python3
import sys

from iolab.cli.main import main

sys.exit(main())
"""

# path in the guest -> (mode, text)
FILES: dict[str, tuple[int, str]] = {
    MOUNT: (0o755, _MOUNT),
    PORT: (0o755, _PORT),
    INITRAMFS_POSTINST_WRAPPER: (0o755, _INITRAMFS_POSTINST),
    "/etc/initramfs-tools/conf.d/iolab-guest": (0o644, _INITRAMFS_CONF),
    "/etc/initramfs-tools/hooks/iolab-guest": (0o755, _INITRAMFS_HOOK),
    "/etc/systemd/system/iolab-guest-run.service": (0o644, _RUN_UNIT),
    "/etc/systemd/system/iolab-guest-service.service": (0o644, _SERVICE_UNIT),
    "/etc/systemd/network/50-iolab-guest.network": (0o644, _NETWORK),
    "/etc/fstab": (0o644, _FSTAB),
    "/etc/hostname": (0o644, "iolab-guest\n"),
    # the journal in memory only: nothing to flush to disk at boot, nothing left in the overlay
    "/etc/systemd/journald.conf.d/iolab-guest.conf": (0o644, "[Journal]\nStorage=volatile\n"),
    "/opt/iolab/bin/iolab": (0o755, _IOLAB),
    "/opt/iolab/venv.pth": (0o644, "/opt/iolab/src\n"),
}
UNITS = ("iolab-guest-run.service", "iolab-guest-service.service", "systemd-networkd.service")
# Each unit costs ~0.1-3 s of a TCG boot.  wait-online would wait 2 minutes for a network
# nobody needs at boot (the service retries by itself); kexec-tools' own LSB scripts would
# load a kernel at every boot and kexec on reboot; timers, gettys and scrubbers do nothing
# useful in a throw-away guest, nor do a random seed kept in an overlay that is thrown away,
# a flush of a journal kept in memory, or utmp's runlevel records.
MASKED = (
    "systemd-networkd-wait-online.service",
    "kexec-load.service",
    "kexec.service",
    "getty-static.service",
    "getty@tty1.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "dpkg-db-backup.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "systemd-tmpfiles-clean.timer",
    "systemd-update-utmp.service",
    "systemd-update-utmp-runlevel.service",
    "systemd-random-seed.service",
    "systemd-journal-flush.service",
    "systemd-binfmt.service",
    "proc-sys-fs-binfmt_misc.automount",
    "dev-hugepages.mount",
    "dev-mqueue.mount",
    "sys-fs-fuse-connections.mount",
    "modprobe@efi_pstore.service",
    "modprobe@fuse.service",
    "systemd-sysusers.service",
    "systemd-network-generator.service",
)
# installed (issue 19's dm-multipath targets need it) but started only when asked for
DISABLED = ("multipathd.service", "multipathd.socket")
# systemd runs every generator before it starts a single unit; under TCG each is ~0.12-0.2 s
# of a CPU (an ELF start), and these find nothing to do in the guest (no encrypted,
# verity or integrity volumes, no hibernation image, no GPT root to discover, no SysV
# scripts or rc.local, no systemd.run= or debug words, no offline update) or make what
# it does not use (a serial login on the console).  Each is replaced by a link to
# /dev/null in /etc/systemd/system-generators (systemd.generator(7)); fstab's stays.
GENERATORS_OFF = (
    "systemd-cryptsetup-generator",
    "systemd-debug-generator",
    "systemd-getty-generator",
    "systemd-gpt-auto-generator",
    "systemd-hibernate-resume-generator",
    "systemd-integritysetup-generator",
    "systemd-rc-local-generator",
    "systemd-run-generator",
    "systemd-system-update-generator",
    "systemd-sysv-generator",
    "systemd-veritysetup-generator",
)


def digest() -> str:
    """A hash of every file above and the units' states: part of the image's cache key."""
    h = hashlib.sha256()
    for path in sorted(FILES):
        mode, text = FILES[path]
        h.update(f"{path}\0{mode:o}\0{text}\0".encode())
    h.update("\0".join((*UNITS, "-", *MASKED, "-", *DISABLED, "-", *GENERATORS_OFF)).encode())
    return h.hexdigest()[:16]
