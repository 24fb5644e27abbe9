#!/usr/bin/env bash
# A workspace that depends on ringlet builds its targets as the clone does:
# examples/consumer builds @ringlet//examples/mlp:train_mlp with none of
# ringlet's .bazelrc (its --compilation_mode is Bazel's default, fastbuild),
# and its run is timed beside the clone's build of the same program, same
# flags, best of two each. Fails when the consumer's run takes more than
# twice the clone's (an unoptimised ringlet runs about 13x slower). Run by
# .ci/run after the clone's `./bazelw test //...`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
args=(--devices=cpu:2 --epochs=1)

best_of_two() {  # seconds of the faster of two runs of "$@"
  local best=""
  for _ in 1 2; do
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null
    end=$(date +%s.%N)
    best=$(python3 -c "import sys; t=$end-$start; b='$best'; print(min(t, float(b)) if b else t)")
  done
  printf '%.2f' "$best"
}

./bazelw build //examples/mlp:train_mlp >/dev/null 2>&1
clone_bin="$(./bazelw info bazel-bin 2>/dev/null)/examples/mlp/train_mlp"

cd examples/consumer
start=$SECONDS
bazel build @ringlet//examples/mlp:train_mlp
build_s=$((SECONDS - start))
consumer_bin="$(bazel info bazel-bin 2>/dev/null)/external/ringlet/examples/mlp/train_mlp"

clone_s=$(best_of_two "$clone_bin" "${args[@]}")
consumer_s=$(best_of_two "$consumer_bin" "${args[@]}")
bazel shutdown
ratio=$(python3 -c "print(f'{$consumer_s / $clone_s:.2f}')")
echo "train_mlp ${args[*]}: the consumer's build ${consumer_s} s, the" \
  "clone's ${clone_s} s (${ratio}x; the consumer's build took ${build_s} s)"
if python3 -c "import sys; sys.exit(0 if $consumer_s > 2 * $clone_s else 1)"; then
  echo "the consumer's build of ringlet runs more than twice as slow as" \
    "the clone's: are ringlet's optimisation flags (third_party/copts.bzl)" \
    "still carried by its targets?" >&2
  exit 1
fi
