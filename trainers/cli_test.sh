#!/usr/bin/env bash
# Each bad invocation of each trainer exits non-zero with a one-line message
# that names the problem; --help works. Args: the two trainer binaries.
set -uo pipefail

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect_error <binary> <text the message must hold> <args...>
expect_error() {
  local bin="$1" want="$2"
  shift 2
  local err rc
  err="$(timeout 60 "$bin" "$@" 2>&1 >/dev/null)"
  rc=$?
  last_rc=$rc
  local name
  name="$(basename "$bin") $*"
  [[ $rc -ne 0 ]] || fail "$name: exit code 0"
  [[ $rc -ne 124 ]] || fail "$name: hung"
  [[ "$err" == *"$want"* ]] || fail "$name: message lacks '$want': $err"
  [[ "$(printf '%s\n' "$err" | grep -c .)" -eq 1 ]] ||
    fail "$name: message is not one line: $err"
}

# expect_usage_error: as expect_error, and the exit code is 2 (a usage
# error, the shell convention; CLI11's own codes were 105 to 115).
expect_usage_error() {
  expect_error "$@"
  [[ $last_rc -eq 2 ]] || fail "$(basename "$1") ${*:3}: exit code $last_rc, not 2"
}

tmp="${TEST_TMPDIR:-/tmp}"
quick=(--limit=64 --test_limit=16 --batch_size=32 --devices=cpu:1)

for bin in "$1" "$2"; do
  expect_usage_error "$bin" "--bogus" --bogus
  expect_usage_error "$bin" "--batch_size: must be auto or a whole number above 0, got '0'" \
    --batch_size=0
  expect_usage_error "$bin" "--lr: must be auto or a finite number above 0, got '-1'" --lr=-1
  # --lr=inf was accepted and trained on NaN.
  expect_usage_error "$bin" "--lr: must be auto or a finite number above 0, got 'inf'" \
    --lr=inf
  expect_usage_error "$bin" "--epoch=1: no such flag; did you mean --epochs?" \
    --epoch=1
  expect_usage_error "$bin" "--devices=gpu:0 is not understood" --devices=gpu:0
  expect_usage_error "$bin" "'O' is not a whole number of CPU devices" \
    --devices=cpu:O
  expect_usage_error "$bin" "--backend: 'ncll' is not one of auto, mpi, naive, nccl, ring" \
    --backend=ncll
  expect_usage_error "$bin" "--epochs: must be a whole number above 0, got 'x'" \
    --epochs=x
  # Once "At Most 1 required but received 2".
  expect_usage_error "$bin" "--epochs: must be a whole number above 0, got '1.5'" \
    --epochs=1.5
  expect_usage_error "$bin" "--epochs: must be at most 2147483647" \
    --epochs=99999999999
  # Once "cpu needs a count of at least 1", and an out-of-memory kill.
  expect_usage_error "$bin" "cpu:0 is named twice" --devices=cpu:0,cpu:0
  expect_usage_error "$bin" "'2x' is not a whole number of CPU devices" \
    --devices=cpu:2x
  expect_usage_error "$bin" "at most 256 CPU devices per process" \
    --devices=cpu:1000
  # Once "unknown backend 'mpi'".
  expect_error "$bin" "the mpi backend needs processes started by mpirun" \
    --backend=mpi "${quick[@]}"
  # Output paths are checked before training: with 100000 epochs ahead, a
  # late check would be a timeout here.
  expect_error "$bin" "--params_out: cannot write /nonexistent/p.bin" \
    --params_out=/nonexistent/p.bin --epochs=100000
  expect_error "$bin" "--plot_out: cannot write /nonexistent/p.svg" \
    --plot_out=/nonexistent/p.svg --epochs=100000
  expect_error "$bin" "--plot_out: $tmp is a folder" --plot_out="$tmp" \
    --epochs=100000
  expect_error "$bin" "--plot_out and --metrics_out name the same file" \
    --metrics_out="$tmp/run.out" --plot_out="$tmp/./run.out" --epochs=100000
  expect_error "$bin" "--resume needs --checkpoint_dir" --resume
  expect_usage_error "$bin" "--micro_shards: cuts batches for --reproducible only" \
    --micro_shards=4
  expect_usage_error "$bin" "--early_stop: chooses by the held-out images' accuracy: add --validation" \
    --early_stop=3
  expect_usage_error "$bin" "--keep_best: keeps the best epoch in --params_out or --checkpoint_dir" \
    --keep_best --validation=0.1
  expect_usage_error "$bin" "--micro_shards: must be at most 4096" \
    --reproducible --micro_shards=5000
  expect_error "$bin" "give --micro_shards=3 or more" --reproducible \
    --micro_shards=2 --limit=64 --test_limit=16 --devices=cpu:3
  # --metrics_out=/dev/stdout into a redirected log: every line kept, the
  # JSON lines once each (the log was once replaced by the metrics file).
  "$bin" --epochs=2 "${quick[@]}" --metrics_out=/dev/stdout \
    >"$tmp/stdout.log" 2>/dev/null || fail "$bin --metrics_out=/dev/stdout failed"
  [[ "$(grep -c '^epoch [12]/2: ' "$tmp/stdout.log")" == 2 &&
    "$(grep -c '^{"epoch":[12],' "$tmp/stdout.log")" == 2 &&
    "$(grep -c '^{"run":' "$tmp/stdout.log")" == 1 ]] ||
    fail "$bin --metrics_out=/dev/stdout: $(cat "$tmp/stdout.log")"
  # A fresh run over an earlier checkpoint says it will replace it.
  rm -rf "$tmp/earlier"
  "$bin" --checkpoint_dir="$tmp/earlier" --epochs=1 "${quick[@]}" \
    >/dev/null 2>&1 || fail "$bin: the first checkpointed run failed"
  err="$("$bin" --checkpoint_dir="$tmp/earlier" --epochs=1 "${quick[@]}" \
    2>&1 >/dev/null)" || fail "$bin: the second checkpointed run failed"
  [[ "$err" == *"note: $tmp/earlier/$(basename "$bin").ckpt holds an earlier run (written "*"); this run starts afresh and replaces it (add --resume to continue that run instead)"* ]] ||
    fail "$bin: no note that an earlier checkpoint is replaced: $err"
  # One run per checkpoint folder: the second names the first.
  rm -rf "$tmp/locked"
  "$bin" --checkpoint_dir="$tmp/locked" --epochs=100000 "${quick[@]}" \
    >/dev/null 2>&1 &
  holder=$!
  for _ in $(seq 600); do
    [[ -s "$tmp/locked/$(basename "$bin").lock" ]] && break
    sleep 0.1
  done
  expect_error "$bin" "--checkpoint_dir: $tmp/locked is in use by another run of $(basename "$bin") (pid $holder on host " \
    --checkpoint_dir="$tmp/locked" "${quick[@]}"
  kill -9 "$holder"
  wait "$holder" 2>/dev/null
  touch "$tmp/a_file"
  expect_error "$bin" "--checkpoint_dir: $tmp/a_file is not a folder" \
    --checkpoint_dir="$tmp/a_file" --epochs=100000
  expect_error "$bin" "--checkpoint_dir: /dev/null is not a folder" \
    --checkpoint_dir=/dev/null --epochs=100000
  # A device with nothing behind it (no terminal under the test runner).
  if ! (: >/dev/tty) 2>/dev/null; then
    expect_error "$bin" "--plot_out: cannot write /dev/tty (No such device or address); nothing is behind that device here" \
      --plot_out=/dev/tty --epochs=100000
  fi
  # Inputs that never end, or do not fit: one line, not the OOM killer.
  expect_error "$bin" "--params_in: /dev/zero is a device, not a file" \
    --params_in=/dev/zero "${quick[@]}"
  mkdir -p "$tmp/a_folder"
  expect_error "$bin" "--params_in: $tmp/a_folder is a folder, not a file" \
    --params_in="$tmp/a_folder" "${quick[@]}"
  expect_error "$bin" "--resume: no file at $tmp/empty/" \
    --resume --checkpoint_dir="$tmp/empty" "${quick[@]}"
  # A diverging run once hung drawing an infinite axis (--plot_out) and
  # otherwise trained on NaN to the end, exit 0.
  rm -f "$tmp/diverged.svg"
  err="$(timeout 60 "$bin" --lr=1e30 --epochs=3 --plot_out="$tmp/diverged.svg" \
    "${quick[@]}" 2>&1 >/dev/null)"
  rc=$?
  ((rc != 0 && rc != 124)) || fail "$bin --lr=1e30: exit code $rc"
  [[ "$(tail -n 1 <<<"$err")" == *"training diverged at epoch 1, step "*"try a smaller --lr"* ]] ||
    fail "$bin --lr=1e30: last line is not the divergence: $err"
  [[ ! -e "$tmp/diverged.svg" ]] ||
    fail "$bin: a plot was written for a run that diverged in epoch 1"
  # No GPU: that, and what the CUDA runtime said (or that the build has no
  # CUDA), not "update the driver".
  expect_error "$bin" "--devices=cuda:0: " --devices=cuda:0
  expect_error "$bin" "; use --devices=cpu:2 or --devices=auto" \
    --devices=cuda:0,cuda:0
  err="$(timeout 60 "$bin" --devices=cuda:0 2>&1 >/dev/null)"
  [[ "$err" == *"no usable NVIDIA GPU or driver (CUDA runtime: "* ||
    "$err" == *"built without CUDA"* ]] ||
    fail "$bin --devices=cuda:0: does not say there is no GPU: $err"
  expect_error "$bin" "--precision=tf32 applies to GPUs" --precision=tf32 \
    --devices=cpu:1
  expect_error "$bin" "--conv_algorithms=deterministic applies to GPUs" \
    --conv_algorithms=deterministic --devices=cpu:1
  expect_error "$bin" "--conv_algorithms: 'fastest' is not one of" \
    --conv_algorithms=fastest
  expect_error "$bin" "--layout=nhwc applies to GPUs" --layout=nhwc \
    --devices=cpu:1
  expect_error "$bin" "--layout: 'NHWC' is not one of" --layout=NHWC
  expect_usage_error "$bin" "--devices=gpu is not understood" --devices=gpu
  expect_usage_error "$bin" "--backend: 'carrier' is not one of" --backend=carrier
  # "needs GPUs" with CUDA, "is not in this build" without (cpu_only).
  expect_error "$bin" "the nccl backend" --backend=nccl
  # Once "rank 0 is on cuda:0" for CPU devices.
  expect_error "$bin" "the nccl backend runs on GPUs, and these 2 rank(s) are in host memory" \
    "${quick[@]}" --backend=nccl --devices=cpu:2
  expect_error "$bin" "apt-get install dataset-fashion-mnist" \
    --data_dir=/nonexistent
  expect_error "$bin" "--metrics_out: cannot write /nonexistent/m.jsonl" \
    --metrics_out=/nonexistent/m.jsonl --limit=8 --test_limit=8 --epochs=1 \
    --batch_size=8
  # The last of a repeated flag wins (it once said "At Most 1 required").
  expect_error "$bin" "--devices=gpu is not understood" --devices=cpu:1 \
    --devices=gpu
  expect_error "$bin" "--eval_only needs --params_in" --eval_only
  expect_error "$bin" "--resume and --params_in both set the parameters" \
    --resume --checkpoint_dir="$tmp/ckpt" --params_in="$tmp/p.params"
  expect_usage_error "$bin" "--momentum: must be a number at least 0 and below 1, got '1'" \
    --momentum=1
  expect_usage_error "$bin" "--lr_schedule" --lr_schedule=linear
  expect_usage_error "$bin" "--clip_grad_norm: must be a number 0 or more" \
    --clip_grad_norm=-1
  # Once exit 1 after the data had loaded: a usage error, before any work.
  expect_usage_error "$bin" "--warmup_epochs: must be less than --epochs (2), got 3" \
    --warmup_epochs=3 --epochs=2 "${quick[@]}"
  expect_usage_error "$bin" "--warmup_epochs: must be less than --epochs (10), got 10" \
    --warmup_epochs=10
  # Once read as 2^64 - 1 without a word.
  for seed in -1 99999999999999999999999 18446744073709551616 1.5; do
    expect_usage_error "$bin" \
      "--seed: must be a whole number from 0 to 18446744073709551615, got '$seed'" \
      --seed="$seed"
  done
  # No floating-point flag takes nan or inf.
  for flag in --lr --momentum --weight_decay --beta1 --beta2 --eps \
    --warmup_epochs --clip_grad_norm --validation; do
    for value in nan inf -inf; do
      expect_usage_error "$bin" "$flag: must be" "$flag=$value"
    done
  done
  expect_error "$bin" "--params_in: no file at $tmp/none.params" \
    --params_in="$tmp/none.params" "${quick[@]}"
  # --params_out then --eval_only: the same test accuracy as the run's end.
  rm -f "$tmp/p.params"
  trained="$("$bin" --epochs=1 --momentum=0.9 --lr_schedule=cosine \
    --warmup_epochs=0.5 --clip_grad_norm=1 --params_out="$tmp/p.params" \
    "${quick[@]}" 2>/dev/null | grep '^epoch 1/1')" ||
    fail "$bin: the training run with knobs failed"
  evaluated="$("$bin" --eval_only --params_in="$tmp/p.params" \
    "${quick[@]}" 2>/dev/null)" || fail "$bin --eval_only failed"
  want="$(sed -E 's/.*test acc ([0-9.]+),.*/\1/' <<<"$trained")"
  [[ "$evaluated" == "test acc: $want on 16 images in "* ]] ||
    fail "$bin --eval_only: '$evaluated', the run ended at test acc $want"
  # --validation and --eval_every: held-out images, a line per evaluation,
  # the metrics' eval records and the epoch's val_acc.
  rm -f "$tmp/val.jsonl"
  run="$("$bin" --epochs=1 --validation=0.25 --eval_every=1 \
    --metrics_out="$tmp/val.jsonl" "${quick[@]}" 2>/dev/null)" ||
    fail "$bin --validation --eval_every failed"
  [[ "$run" == *"48 training (16 held out for validation) and 16 test images"* ]] ||
    fail "$bin --validation: the header does not say what was held out: $run"
  [[ "$(grep -c '^step [12] (epoch 1): validation acc [0-9.]* on 16 images' <<<"$run")" == 2 ]] ||
    fail "$bin --eval_every=1: not one line per step: $run"
  grep -q '^epoch 1/1: .*, val acc [0-9.]*, test acc' <<<"$run" ||
    fail "$bin --validation: no val acc in the epoch line: $run"
  [[ "$(grep -c '"eval":{"epoch":1,"step":' "$tmp/val.jsonl")" == 2 ]] ||
    fail "$bin --eval_every: no eval records in the metrics"
  expect_usage_error "$bin" "--validation: must be a number at least 0 and below 1" \
    --validation=1
  expect_error "$bin" "leaves none to train on" --validation=0.99 \
    --limit=10 --test_limit=8 --devices=cpu:1
  help="$("$bin" --help)" || fail "$bin --help: non-zero exit"
  [[ "$help" == *"--devices"* && "$help" == *"--plot_out"* ]] ||
    fail "$bin --help lacks the flags"
  [[ "$help" == *"--epochs"*"=10"* ]] || fail "$bin --help shows no defaults"
done

# Synchronised batch norm sums in an order that depends on the devices.
expect_usage_error "$2" "--reproducible excludes --sync_bn" --reproducible \
  --sync_bn

if [[ $failures -gt 0 ]]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "all CLI checks passed"
