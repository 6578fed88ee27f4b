#!/usr/bin/env bash
# Real tool outputs for the constructed seed threads (make_threads.py): the commands the
# threads quote, run with this machine's fio and xfs_io on an ext4 loop image in /dev/shm that
# this script makes and removes (also on failure).  The figures are this machine's, not the
# original threads'.  Writes out/*.txt.
#   iversion-on.txt / iversion-off.txt   fio, ext4 mounted -o iversion / -o noiversion
#   nodelalloc-1.txt / nodelalloc-2.txt  xfs_io pwrite -W 0 1G, ext4 -o dioread_nolock,nodelalloc
# usage (as root): tests/data/threads/generate.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/out"
img=/dev/shm/iolab-threads-$$.img
mnt=$(mktemp -d /tmp/iolab-threads.XXXXXX)
loop=""
cleanup() {
  cd /
  if mountpoint -q "$mnt"; then umount "$mnt"; fi
  if [ -n "$loop" ]; then losetup -d "$loop"; fi
  rm -f "$img"
  rmdir "$mnt" 2>/dev/null || true
}
trap cleanup EXIT
truncate -s 3G "$img"
loop=$(losetup --find --show "$img")
fresh() {  # fresh ext4 mounted with $1
  if mountpoint -q "$mnt"; then umount "$mnt"; fi
  mkfs.ext4 -F -q -E lazy_itable_init=0,lazy_journal_init=0 "$loop"
  mount -t ext4 -o "$1" "$loop" "$mnt"
  mkdir -p "$mnt/test"
}
for opt in iversion noiversion; do
  fresh "$opt"
  name=on; [ "$opt" = noiversion ] && name=off
  (cd "$mnt" && fio --name=iversion-test --directory="$mnt/test" --rw=randwrite --bs=4k \
    --size=64M --ioengine=psync --numjobs=4 --runtime=3 --time_based --group_reporting \
    > "$here/out/iversion-$name.txt")
done
for n in 1 2; do
  fresh dioread_nolock,nodelalloc
  (cd "$mnt" && xfs_io -f -c "pwrite -W 0 1G" "$mnt/testfile" > "$here/out/nodelalloc-$n.txt")
done
