#!/usr/bin/env bash
# Regenerates the xfs_io fixtures with the machine's xfs_io, on a file in an ext4 loop image in
# RAM.  Each case writes NAME.txt (xfs_io's standard output, as a user would paste it) and a line
# in MANIFEST: NAME <TAB> direction <TAB> bytes asked for <TAB> ops expected <TAB> xfs_io args.
# The tests check the readers against the bytes and ops asked for here.  Run as root; removes the
# image, loop device and mount on exit, also on failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/iolab-xfsio.XXXXXX)
img=/dev/shm/iolab-xfsio-$$.img
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
case_() {  # case_ NAME DIRECTION BYTES OPS xfs_io-args...
  local name=$1 dir=$2 bytes=$3 ops=$4; shift 4
  xfs_io "$@" > "$here/$name.txt"
  local args="$*"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$dir" "$bytes" "$ops" "${args//$f/FILE}" >> "$manifest"
}
M=$((1024 * 1024))
case_ pwrite-default write $((16 * M)) 4096 -f -c "pwrite 0 16m" "$f"
case_ pwrite-W-b64k write $((64 * M)) 1024 -f -c "pwrite -W -b 64k 0 64m" "$f"
case_ pwrite-S-b1m write $((32 * M)) 32 -f -c "pwrite -S 0x5a -b 1m 0 32m" "$f"
case_ pwrite-w-b8k write $((8 * M)) 1024 -f -c "pwrite -w -b 8k 0 8m" "$f"
case_ pwrite-direct-b1m write $((32 * M)) 32 -f -d -c "pwrite -b 1m 0 32m" "$f"
case_ pwrite-dsync-long write $((256 * M)) 65536 -f -c "pwrite -D -b 4k 0 256m" "$f"
case_ pread-b128k read $((64 * M)) 512 -c "pread -b 128k 0 64m" "$f"
case_ pread-random-b4k read $((16 * M)) 4096 -c "pread -R -b 4k 0 16m" "$f"
case_ pread-direct-b64k read $((32 * M)) 512 -d -c "pread -b 64k 0 32m" "$f"
case_ csv-pwrite write $((16 * M)) 4096 -f -c "pwrite -C 0 16m" "$f"
case_ csv-pread read $((16 * M)) 128 -c "pread -C -b 128k 0 16m" "$f"
case_ csv-pwrite-long write $((256 * M)) 65536 -f -c "pwrite -C -D -b 4k 0 256m" "$f"
# two commands in one invocation: two results in one file, in order
case_ two-commands write+read $((4 * M))+$((4 * M)) 1024+1024 -f -c "pwrite 0 4m" -c "pread 0 4m" "$f"
