#!/usr/bin/env bash
# Usage: forbidden_deps_test.sh DEPS_FILE PREFIX...
# Fails when any label in DEPS_FILE (a genquery output) starts with a PREFIX.
set -euo pipefail
deps_file="$1"
shift
[[ -s "$deps_file" ]] || { echo "empty dependency list: $deps_file"; exit 1; }
status=0
for prefix in "$@"; do
  if grep -E "^${prefix}[:/]" "$deps_file"; then
    echo "FAIL: the labels above start with $prefix"
    status=1
  fi
done
echo "checked $(wc -l <"$deps_file") labels against: $*"
exit "$status"
