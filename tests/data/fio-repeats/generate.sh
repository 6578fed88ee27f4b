#!/usr/bin/env bash
# Regenerates repeated fio runs of one job on two settings (fio JSON, the machine's fio, on files
# in a temporary directory in /dev/shm, removed on exit): out/A-N.json with bs=4k and
# out/B-N.json with bs=8k, 8 runs each, interleaved A B A B so drift hits both sides alike.
# Two sides of imported results, for the export to Go's benchmark format (benchstat).
# usage: tests/data/fio-repeats/generate.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /dev/shm/iolab-repeats.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$here/out"
rm -f "$here"/out/*.json
for i in 1 2 3 4 5 6 7 8; do
  for side in A B; do
    bs=4k; [ "$side" = B ] && bs=8k
    (cd "$work" && fio --name=randread --directory="$work" --ioengine=psync --rw=randread \
      --bs="$bs" --size=32m --runtime=1 --time_based=0 --output-format=json \
      --output="$here/out/$side-$i.json" >/dev/null)
  done
done
rm -f "$work"/*
