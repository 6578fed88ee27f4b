#!/usr/bin/env bash
# Runs a GIVEN fio binary over DIR/jobs/*.fio in every output format it supports and writes
# DIR/out/ in the layout of tests/data/fio-3.33/out:
#   NAME.txt + NAME.json            normal text and JSON
#   NAME.plus.txt + NAME.plus.json  normal text and json+      (when fio has json+)
#   NAME.terseV.txt + NAME.terseV.json  terse version V and JSON (each V fio accepts)
# When fio takes a comma list in --output-format, each pair comes from ONE run, so readers can
# be checked against each other; otherwise each file is its own run, out/generated.txt says so
# (same_run=no) and there is no NAME.terseV.json.  What fio supports is found by running a tiny null-engine job, not by
# trusting its version number (fio 2.2 silently ignores formats it does not know).
#
# usage: fio-generate.sh FIO_BINARY DIR      (as root; uses an ext4 loop image in /dev/shm and
# removes the image, loop device and mount on exit, also on failure)
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 FIO_BINARY DIR" >&2; exit 2; }
fio=$(realpath "$1")
dir=$(realpath "$2")
[ -x "$fio" ] || { echo "$fio: not executable" >&2; exit 2; }
[ -d "$dir/jobs" ] || { echo "$dir/jobs: no such directory" >&2; exit 2; }
out="$dir/out"
mkdir -p "$out"
work=$(mktemp -d /tmp/iolab-fixtures.XXXXXX)
probe=$(mktemp -d /tmp/iolab-fioprobe.XXXXXX)
img=/dev/shm/iolab-fixtures-$$.img
loop=""
cleanup() {
  cd /
  if mountpoint -q "$work"; then umount "$work"; fi
  if [ -n "$loop" ]; then losetup -d "$loop"; fi
  rm -f "$img"
  rmdir "$work" 2>/dev/null || true
  rm -rf "$probe"
}
trap cleanup EXIT

split() {  # fio writes the JSON object first, then the other form: split them apart
  local src=$1 text=$2 json=$3
  awk -v t="$text" -v j="$json" 'BEGIN{o=t} /^\{$/ {o=j} {print > o} /^\}$/ {o=t}' "$src"
  [ -f "$text" ] || : > "$text"
}

# --- what this fio can do -------------------------------------------------------------------
printf '[probe]\nioengine=null\nrw=read\nbs=4k\nsize=64k\n' > "$probe/probe.fio"
run_probe() { (cd "$probe" && "$fio" "$@" --output="$probe/o" probe.fio >/dev/null 2>&1) || true; cat "$probe/o" 2>/dev/null; rm -f "$probe/o"; }
same_run=no
if run_probe --output-format=normal,json | grep -q '^{$' && run_probe --output-format=normal,json | grep -q 'Run status'; then
  same_run=yes
fi
plus=no
if run_probe --output-format=json+ | grep -q '"bins"'; then plus=yes; fi
tverses=""
for v in 2 3 4 5; do
  first=$(run_probe --output-format=terse --terse-version=$v | head -n 1 | cut -d';' -f1)
  [ "$first" = "$v" ] && tverses="$tverses $v"
done

# --- the target: ext4 on a loop image in RAM ---------------------------------------------------
truncate -s 512M "$img"
loop=$(losetup --find --show "$img")
mkfs.ext4 -q -F "$loop"
mount "$loop" "$work"
cd "$work"

pair() {  # pair NAME-SUFFIX TEXTFORMAT JSONFORMAT [extra fio args]: one run if possible
  local job=$1 stem=$2 tf=$3 jf=$4; shift 4
  if [ "$same_run" = yes ]; then
    "$fio" --output-format="$tf,$jf" "$@" --output="$out/tmp" "$job" >/dev/null 2>&1 || true
    split "$out/tmp" "$out/$stem.txt" "$out/$stem.json"
  else
    "$fio" --output-format="$tf" "$@" --output="$out/$stem.txt" "$job" >/dev/null 2>&1 || true
    rm -f "$work"/*.dat "$work"/*.[0-9]* 2>/dev/null || true
    "$fio" --output-format="$jf" "$@" --output="$out/$stem.json" "$job" >/dev/null 2>&1 || true
  fi
  rm -f "$work"/*.dat "$work"/*.[0-9]* 2>/dev/null || true
}

for job in "$dir"/jobs/*.fio; do
  name=$(basename "$job" .fio)
  pair "$job" "$name" normal json
  if [ "$plus" = yes ]; then
    if [ "$same_run" = yes ]; then
      pair "$job" "$name.plus" normal json+
    else
      "$fio" --output-format=json+ --output="$out/$name.plus.json" "$job" >/dev/null 2>&1 || true
      rm -f "$work"/*.dat "$work"/*.[0-9]* 2>/dev/null || true
    fi
  fi
  for v in $tverses; do
    if [ "$same_run" = yes ]; then
      pair "$job" "$name.terse$v" terse json --terse-version=$v
    else  # a JSON file from another run would only mislead a same-run comparison
      "$fio" --output-format=terse --terse-version=$v --output="$out/$name.terse$v.txt" "$job" \
        >/dev/null 2>&1 || true
      rm -f "$work"/*.dat "$work"/*.[0-9]* 2>/dev/null || true
    fi
  done
done
rm -f "$out/tmp"
{
  echo "fio_version=$("$fio" --version)"
  echo "same_run=$same_run"
  echo "json_plus=$plus"
  echo "terse_versions=${tverses# }"
  echo "kernel=$(uname -r)"
  echo "filesystem=ext4 on a loop image in /dev/shm"
} > "$out/generated.txt"
