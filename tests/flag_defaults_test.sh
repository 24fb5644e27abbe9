#!/usr/bin/env bash
# Every default a binary's --help shows is accepted when passed back: the
# binary is run with each shown default as a flag, plus --print_flags
# (parse, print and exit), and must exit 0 and print each value back.
# A dashed spelling of each flag (--batch-size) is accepted the same way.
# Args: the binaries.
set -uo pipefail

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

for bin in "$@"; do
  name="$(basename "$bin")"
  help="$("$bin" --help)" || {
    fail "$name --help: exit code $?"
    continue
  }
  # "  --epochs INT=10   passes over..." -> --epochs=10: the default
  # follows the '=' that ends the type (a word in capitals, or true|false,
  # perhaps with a range: "INT in [0 - 12]").
  mapfile -t args < <(sed -nE \
    's/^ +(-[a-z],)?(--[a-z0-9_]+) (true\|false|[A-Z][^=]*)=([^ ]+).*$/\2=\4/p' \
    <<<"$help")
  ((${#args[@]} >= 1)) || fail "$name: found no default in --help"
  printed="$("$bin" "${args[@]}" --print_flags 2>&1)"
  rc=$?
  ((rc == 0)) || fail "$name ${args[*]} --print_flags: exit code $rc: $printed"
  for a in "${args[@]}"; do
    flag="${a%%=*}"
    flag="${flag#--}"
    grep -qE "^${flag}=" <<<"$printed" ||
      fail "$name: --print_flags does not show ${flag}: $printed"
    dashed="--${flag//_/-}=${a#*=}"
    out="$("$bin" "$dashed" --print_flags 2>&1)" ||
      fail "$name $dashed --print_flags: exit code $?: $out"
  done
  # A near miss names the flag meant; exit code 2.
  out="$("$bin" --help_me 2>&1)"
  rc=$?
  ((rc == 2)) || fail "$name --help_me: exit code $rc, not 2"
  [[ "$out" == *"no such flag"* ]] || fail "$name --help_me: '$out'"
  echo "$name: ${#args[@]} defaults accepted"
done

if ((failures > 0)); then
  echo "$failures failure(s)"
  exit 1
fi
echo "every shown default accepted"
