#!/usr/bin/env bash
# parallel/ names no layer of nn: a layer meets its replica through
# Module::SetReplicaContext, so a user's own layer can do what Dropout and
# BatchNorm2d do. Every class deriving from Module in nn's layer headers is
# looked for, as a word, in parallel/'s library sources (tests may build
# models of any layers).
#
#   parallel_names_no_layer_test.sh --layers H... --sources S...
set -euo pipefail
layers=() sources=() into=""
for a in "$@"; do
  case "$a" in
    --layers) into=layers ;;
    --sources) into=sources ;;
    *) if [[ $into == layers ]]; then layers+=("$a"); else sources+=("$a"); fi ;;
  esac
done
names=$(grep -hoE "class [A-Za-z0-9_]+ (final )?: public Module" "${layers[@]}" |
  awk '{print $2}' | sort -u)
[[ -n "$names" ]] || { echo "found no layer classes in ${layers[*]}" >&2; exit 1; }
(( ${#sources[@]} > 0 )) || { echo "no parallel/ sources given" >&2; exit 1; }
bad=0
for n in $names; do
  for f in "${sources[@]}"; do
    case "$f" in *_test.cc | */testing/*) continue ;; esac
    if grep -nw "$n" "$f"; then
      echo "FAIL: $f names the layer $n" >&2
      bad=1
    fi
  done
done
echo "checked $(wc -w <<<"$names") layer names in ${#sources[@]} files"
exit $bad
