#!/usr/bin/env bash
# Regenerates the real dd fixtures with the machine's dd (coreutils), on a file in an ext4 loop
# image in RAM.  Each case writes NAME.txt (dd's standard error, as a user would paste it: the
# `\r`-separated status=progress lines are kept as dd wrote them) and a line in MANIFEST:
# NAME <TAB> bytes copied (what bs x count asks for) <TAB> records out <TAB> dd operands.
# The hand-made older forms (old-*.txt) are not produced here: see README.txt.  Run as root;
# removes the image, loop device and mount on exit, also on failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/iolab-dd.XXXXXX)
img=/dev/shm/iolab-dd-$$.img
loop=""
cleanup() {
  cd /
  if mountpoint -q "$work"; then umount "$work"; fi
  if [ -n "$loop" ]; then losetup -d "$loop"; fi
  rm -f "$img"
  rmdir "$work" 2>/dev/null || true
}
trap cleanup EXIT
truncate -s 384M "$img"
loop=$(losetup --find --show "$img")
mkfs.ext4 -q -F "$loop"
mount "$loop" "$work"
f="$work/testfile"
manifest="$here/MANIFEST"
: > "$manifest"
case_() {  # case_ NAME BYTES RECORDS-OUT dd-operands...
  local name=$1 bytes=$2 rec=$3; shift 3
  LC_ALL=C dd "$@" 2> "$here/$name.txt" >/dev/null
  local args="$*"
  printf '%s\t%s\t%s\t%s\n' "$name" "$bytes" "$rec" "${args//$work\//DIR/}" >> "$manifest"
}
M=$((1024 * 1024))
case_ write-1m-64 $((64 * M)) 64+0 if=/dev/zero of="$f" bs=1M count=64
case_ write-4k-direct $((16 * M)) 4096+0 if=/dev/zero of="$f" bs=4k count=4096 oflag=direct
case_ write-1m-fsync $((128 * M)) 128+0 if=/dev/zero of="$f" bs=1M count=128 conv=fsync
case_ write-progress $((128 * M)) 32768+0 if=/dev/zero of="$f" bs=4k count=32768 oflag=dsync status=progress
case_ read-1m $((128 * M)) 128+0 if="$f" of=/dev/null bs=1M count=128
case_ read-direct-64k $((64 * M)) 1024+0 if="$f" of=/dev/null bs=64k count=1024 iflag=direct
head -c $((3 * M / 2)) /dev/zero > "$work/partial"
case_ read-partial $((3 * M / 2)) 1+1 if="$work/partial" of=/dev/null bs=1M
case_ one-byte 1 1+0 if=/dev/zero of="$f" bs=1 count=1
case_ small-512 512 1+0 if=/dev/zero of="$f" bs=512 count=1
case_ kb-1000 1000 1+0 if=/dev/zero of="$f" bs=1000 count=1
case_ zero-bytes 0 0+0 if=/dev/zero of="$f" bs=1M count=0
