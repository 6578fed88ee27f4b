#!/usr/bin/env bash
# Regenerates the dd fixtures in other languages with the machine's dd (coreutils), one file per
# language that coreutils' catalogue translates dd's summary into (ingest.dd_catalogue.LANGUAGES),
# plus English words with a decimal comma (LC_NUMERIC of a comma locale) and a status=progress
# copy ended by a write error.  The locales are compiled with localedef into a temporary LOCPATH,
# so nothing is installed or changed on the machine.  Nothing is written but to /dev/null.
# Each case: NAME.txt (dd's standard error) and a MANIFEST line
#   NAME <TAB> bytes asked for <TAB> records out <TAB> environment <TAB> dd operands
# usage: tests/data/dd-locales/generate.sh   (from anywhere; needs localedef, dd)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
locpath=$(mktemp -d /tmp/iolab-locales.XXXXXX)
trap 'rm -rf "$locpath"' EXIT
langs=$(cd "$root/src" && python3 -c 'from iolab.ingest import dd_catalogue; print(*dd_catalogue.LANGUAGES)')
manifest="$here/MANIFEST"
: > "$manifest"
rm -f "$here"/*.txt
locale_for() {  # a glibc locale source for a catalogue language: de -> de_DE, zh_CN -> zh_CN
  local lang=$1 src=/usr/share/i18n/locales
  if [ -f "$src/$lang" ]; then echo "$lang"; return; fi
  if [ -f "$src/${lang}_${lang^^}" ]; then echo "${lang}_${lang^^}"; return; fi
  (cd "$src" && ls "${lang}"_* | head -n 1)
}
build() { [ -d "$locpath/$1.UTF-8" ] || localedef -i "$1" -f UTF-8 "$locpath/$1.UTF-8" 2>/dev/null || [ -d "$locpath/$1.UTF-8" ]; }
case_() {  # case_ NAME BYTES RECORDS ENV dd-operands...
  local name=$1 bytes=$2 rec=$3 envs=$4; shift 4
  # shellcheck disable=SC2086
  env -i PATH=/usr/bin:/bin LOCPATH="$locpath" $envs dd "$@" 2> "$here/$name.txt" >/dev/null || true
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$bytes" "$rec" "$envs" "$*" >> "$manifest"
}
for lang in $langs; do
  loc=$(locale_for "$lang")
  build "$loc"
  env="LC_ALL=$loc.UTF-8 LANGUAGE=$lang"
  case_ "$lang-64k" $((80 * 65536)) 80+0 "$env" if=/dev/zero of=/dev/null bs=64k count=80
  case_ "$lang-one-byte" 1 1+0 "$env" if=/dev/zero of=/dev/null bs=1 count=1
  case_ "$lang-512" 512 1+0 "$env" if=/dev/zero of=/dev/null bs=512 count=1
done
build de_DE
build en_US
case_ en-decimal-comma $((80 * 65536)) 80+0 "LC_ALL= LANG=en_US.UTF-8 LC_NUMERIC=de_DE.UTF-8" \
  if=/dev/zero of=/dev/null bs=64k count=80
# status=progress, then the reader goes away: dd prints progress lines, `dd: error writing …`,
# the records and the summary of what it copied before the error.
for lang in C de; do
  name=progress-error-$lang
  env="LC_ALL=C"
  [ "$lang" = C ] || env="LC_ALL=de_DE.UTF-8 LANGUAGE=de"
  # shellcheck disable=SC2086
  ( trap '' PIPE; env -i PATH=/usr/bin:/bin LOCPATH="$locpath" $env \
      dd if=/dev/zero bs=64k count=100000 status=progress 2> "$here/$name.txt" ) \
    | { sleep 2.5; head -c 1000000 > /dev/null; } || true
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" - - "$env" "if=/dev/zero bs=64k count=100000 status=progress | (slow reader)" >> "$manifest"
done
