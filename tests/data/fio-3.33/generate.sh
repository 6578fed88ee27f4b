#!/usr/bin/env bash
# Regenerates the fio 3.x fixtures: every job file in jobs/ in every output format, on an ext4
# loop image in RAM.  Normal text and JSON (and terse and JSON) come from the same run, so
# parsers can be checked against each other.  Run as root; cleans up after itself.
# Arguments: job files to (re)generate; none means every job file in jobs/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/out"
jobs=()
if [ $# -eq 0 ]; then set -- "$here"/jobs/*.fio; fi
for job in "$@"; do jobs+=("$(realpath "$job")"); done
mkdir -p "$out"
work=$(mktemp -d /tmp/iolab-fixtures.XXXXXX)
img=/dev/shm/iolab-fixtures-$$.img
loop=""
cleanup() {
  cd /
  mountpoint -q "$work" && umount "$work"
  [ -n "$loop" ] && losetup -d "$loop"
  rm -f "$img"
  rmdir "$work" 2>/dev/null || true
}
trap cleanup EXIT
truncate -s 512M "$img"
loop=$(losetup --find --show "$img")
mkfs.ext4 -q -F "$loop"
mount "$loop" "$work"
cd "$work"
split() {  # fio writes the JSON object first, then the other form: split them apart
  local src=$1 text=$2 json=$3
  awk -v t="$text" -v j="$json" 'BEGIN{o=t} /^\{$/ {o=j} {print > o} /^\}$/ {o=t}' "$src"
}
for job in "${jobs[@]}"; do
  name=$(basename "$job" .fio)
  fio --output-format=normal,json --output="$out/tmp" "$job" >/dev/null 2>&1 || true
  split "$out/tmp" "$out/$name.txt" "$out/$name.json"
  fio --output-format=normal,json+ --output="$out/tmp" "$job" >/dev/null 2>&1 || true
  split "$out/tmp" "$out/$name.plus.txt" "$out/$name.plus.json"
  for v in 2 3 4 5; do
    fio --output-format=terse,json --terse-version=$v --output="$out/tmp" "$job" >/dev/null 2>&1 || true
    split "$out/tmp" "$out/$name.terse$v.txt" "$out/$name.terse$v.json"
  done
  rm -f "$work"/*.dat "$work"/*.[0-9]* 2>/dev/null || true
done
rm -f "$out/tmp"
