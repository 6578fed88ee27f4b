#!/usr/bin/env bash
# Regenerates fio outputs written in TWO forms by one run (`--output-format=terse,normal` and
# `normal,terse`), and the same job's terse output alone, with the machine's fio on files in a
# temporary directory in /dev/shm (removed on exit).  One run, two forms: iolab must count it once.
# usage: tests/data/fio-two-forms/generate.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /dev/shm/iolab-twoforms.XXXXXX)
trap 'rm -rf "$work"' EXIT
cat > "$work/two-jobs.fio" <<JOB
[global]
directory=$work
ioengine=psync
size=8m
bs=4k
[writer]
rw=randwrite
[reader]
rw=randread
JOB
cat > "$work/grouped.fio" <<JOB
[global]
directory=$work
ioengine=psync
size=4m
bs=64k
group_reporting
numjobs=2
[seqwrite]
rw=write
JOB
for job in two-jobs grouped; do
  for form in terse,normal normal,terse; do
    (cd "$work" && fio --output-format="$form" --output="$here/$job.${form/,/-}.txt" "$job.fio" >/dev/null)
    rm -f "$work"/*.0
  done
done
fio --version > "$here/fio-version.txt"
