#!/usr/bin/env bash
# Builds README.md's "Use one target from another workspace" snippet word for
# word in a fresh folder: the blocks after the <!-- snippet: FILE --> markers
# become FILE, /path/to/ringlet becomes this checkout. Run by .ci/run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d)"
trap 'cd /; (cd "$work" && bazel shutdown >/dev/null 2>&1) || true; rm -rf "$work"' EXIT

# Each marker's next fenced block, written to the file the marker names.
awk -v dir="$work" '
  /^<!-- snippet: [^ ]+ -->$/ { file = dir "/" $3; want = 1; next }
  want && /^```/ && !inside { inside = 1; printf "" > file; next }
  inside && /^```/ { inside = 0; want = 0; close(file); next }
  inside { print >> file }
' "$root/README.md"
for f in .bazelrc WORKSPACE BUILD count_images.cc; do
  [[ -s "$work/$f" ]] || { echo "README.md has no snippet for $f" >&2; exit 1; }
done
sed -i "s#/path/to/ringlet#$root#" "$work/WORKSPACE"
cd "$work"
echo "snippet workspace: $work"
# Nothing but the snippet's own .bazelrc, and a disk cache for CI's speed.
bazel run --disk_cache="$HOME/.cache/ringlet/bazel-disk-cache" //:count_images
