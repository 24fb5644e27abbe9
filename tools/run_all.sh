#!/usr/bin/env bash
# run_all.sh: runs every GPU test of this bundle (tools/gpu_bundle.sh) and
# the quick benchmarks, without Bazel. Finds CUDA, cuDNN, NCCL and cuBLAS in
# $LD_LIBRARY_PATH, a CUDA toolkit's lib64 ($CUDA_PATH, /usr/local/cuda) and
# the nvidia-* Python packages. Ends with one line:
#   gpu: N passed, N failed, N skipped
# (skipped: every case of the test skipped, e.g. no GPU). Logs in ./logs.
#
# Parts, all by default, or the ones named (to fit a time limit per call):
#   run_all.sh [tests] [canaries] [sanitize] [limits] [e2e] [curves] [peers]
#              [bench] [graphs] [profile]
# (profile is not in the default set: it needs ncu and takes minutes.)
# RINGLET_SANITIZE_TOOLS (default "memcheck racecheck initcheck synccheck")
# picks the sanitize part's tools, to fit a call's time.
set -uo pipefail
all_parts="tests canaries sanitize limits e2e curves peers bench graphs"
parts="${*:-$all_parts}"
for part in $parts; do
  case "$part" in
    tests | canaries | sanitize | limits | e2e | curves | peers | bench | \
      graphs | profile) ;;
    *)
      echo "run_all.sh: unknown part '$part'; parts: $all_parts profile" >&2
      exit 2
      ;;
  esac
done
want() { [[ " $parts " == *" $1 "* ]]; }
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

# The programs travel xz-compressed (gpu_bundle.sh): unpacked in place,
# once (xz, else Python's lzma).
if [[ -f programs.tar.xz && ! -e .unpacked ]]; then
  if tar -xJf programs.tar.xz 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall()' \
      programs.tar.xz; then
    touch .unpacked
  else
    echo "run_all.sh: cannot unpack programs.tar.xz (needs xz or python3)" >&2
    exit 1
  fi
fi

libs=()
cuda="${CUDA_PATH:-/usr/local/cuda}"
[[ -d "$cuda/lib64" ]] && libs+=("$cuda/lib64")
if nvidia_dir="$(python3 -c 'import nvidia, os; print(list(nvidia.__path__)[0])' 2>/dev/null)"; then
  for d in "$nvidia_dir"/*/lib; do [[ -d "$d" ]] && libs+=("$d"); done
fi
export LD_LIBRARY_PATH="$(IFS=:; echo "${libs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The build machine's system libraries (syslib/), only when this machine
# lacks one of them: its own copies win otherwise.
# (grep -c, not -q: under pipefail an early exit of grep fails the pipe.)
missing="$(find . -type f -perm -u+x ! -name '*.sh' ! -path './syslib/*' \
  -exec ldd {} + 2>/dev/null | grep -c 'not found')"
if [[ -d syslib ]] && ((missing > 0)); then
  for packed in syslib/*.xz; do
    [[ -e "$packed" && ! -e "${packed%.xz}" ]] || continue
    xz -dc "$packed" >"${packed%.xz}" 2>/dev/null ||
      python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' \
        "$packed" >"${packed%.xz}"
  done
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$here/syslib"
fi
[[ -f bundle.txt ]] && sed 's/^/bundle: /' bundle.txt
echo "library path: ${LD_LIBRARY_PATH:-(none)}"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
    sed 's/^/GPU: /' || echo "GPU: nvidia-smi failed"
else
  echo "GPU: none found (no nvidia-smi); every GPU case should skip"
fi
[[ -d fashion-mnist ]] && export FASHION_MNIST_DIR="$here/fashion-mnist"

mkdir -p logs
passed=0 failed=0 skipped=0
# Prints a result line and keeps it in logs/results.txt, from which
# bench_goals.py says which goals are met (the latest line of a name wins,
# across calls while the folder stays).
result() {
  echo "$1"
  echo "$1" >>logs/results.txt
}
want tests && while read -r test; do
  [[ -n "$test" ]] || continue
  log="logs/$(echo "$test" | tr / _).log"
  timeout 900 "./$test" >"$log" 2>&1
  rc=$?
  if ((rc != 0)); then
    result="FAILED (exit $rc)"
    failed=$((failed + 1))
  elif grep -q '^\[  PASSED  \] 0 tests' "$log" && grep -q '^\[  SKIPPED \]' "$log"; then
    # gtest prints the reason on the line after "file:line: Skipped".
    result="SKIPPED: $(grep -m1 -A1 ': Skipped$' "$log" | tail -n 1 | head -c 160)"
    skipped=$((skipped + 1))
  else
    # One "[  SKIPPED ] Name (N ms)" line per skipped case (the summary
    # lists them again without a time).
    result="PASSED ($(grep -c '^\[       OK \]' "$log") cases, $(grep -c '^\[  SKIPPED \] .* ([0-9]* ms)$' "$log") skipped)"
    passed=$((passed + 1))
  fi
  echo "$test: $result"
done <tests.txt

# NVIDIA's compute-sanitizer. memcheck: out-of-bounds and misaligned
# accesses, leaks of device memory; racecheck: shared-memory races (the
# block reductions); initcheck: device memory read before anything wrote
# it (gradients are allocated uninitialised and must be written whole);
# synccheck: barriers misused. A pass needs a clean report, not only
# passing checks; a failure names the kernels the reports name, ringlet's
# or a library's. Run it from a bundle built with --without_onednn: the
# sanitizer stops programs that link oneDNN.
sanitizer_path() {
  command -v compute-sanitizer ||
    ls "$cuda"/bin/compute-sanitizer /usr/local/cuda*/bin/compute-sanitizer \
      2>/dev/null | head -n 1
}
sanitize() {  # name, tool, program and its arguments
  local name="$1" tool="$2" log="logs/sanitize_$1.log"
  shift 2
  if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "sanitize $name: SKIPPED: no GPU"
    skipped=$((skipped + 1))
    return
  fi
  local tool_path
  tool_path="$(sanitizer_path)"
  if [[ -z "$tool_path" ]]; then
    echo "sanitize $name: SKIPPED: no compute-sanitizer (PATH, \$CUDA_PATH/bin)"
    skipped=$((skipped + 1))
    return
  fi
  timeout 900 "$tool_path" --tool "$tool" --error-exitcode 99 \
    --print-limit 20 "$@" >"$log" 2>&1
  local rc=$?
  if ((rc == 0)); then
    result "sanitize $name: PASSED: $(grep -m1 'ERROR SUMMARY' "$log")"
    passed=$((passed + 1))
  else
    local hint=""
    grep -q 'terminated before first instrumented' "$log" &&
      grep -q '^oneDNN: yes' bundle.txt 2>/dev/null &&
      hint=" (this bundle links oneDNN: build one with gpu_bundle.sh --without_onednn)"
    local kernels
    kernels="$(grep -E '^=+ +at .* in ' "$log" |
      sed -E 's/^=+ +at [^ ]+ in //; s/\([^()]*\)$//; s/^[^ ]*:[0-9]+://' |
      sort | uniq -c | sort -rn | head -n 3 |
      awk '{n=$1; $1=""; printf "%s%s x%s", (NR>1?"; ":""), substr($0,2), n}')"
    result "sanitize $name: FAILED (exit $rc): $(grep -m1 'ERROR SUMMARY' "$log" || tail -n 1 "$log")$hint${kernels:+ (in: $kernels)}"
    failed=$((failed + 1))
  fi
}

# The canaries (gpu/canaries): the same small program with one more piece
# of ringlet's build each, under memcheck. The first that crashes before
# main names the piece; c4 and c5 differ only in a shared object's name.
if want canaries; then
  for canary in gpu/canaries/c*_*; do
    [[ -x "$canary" ]] || continue
    sanitize "canary_$(basename "$canary")" memcheck "./$canary"
  done
fi

# Every GPU test binary under every tool, and a short run of each trainer
# on cuda:0 under memcheck. The cases that run every cuDNN candidate, or a
# step once per allocation, are left out: the sanitizer slows each run
# 10-100 times.
sanitize_filter='-*UnderEveryAlgorithmChoice*:*AnAllocationFailing*'
if want sanitize && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "sanitize: SKIPPED: no GPU"
  skipped=$((skipped + 1))
elif want sanitize; then
  for tool in ${RINGLET_SANITIZE_TOOLS:-memcheck racecheck initcheck synccheck}; do
    while read -r test; do
      [[ -n "$test" ]] || continue
      sanitize "${tool}_$(echo "$test" | tr / _)" "$tool" "./$test" \
        --gtest_filter="$sanitize_filter"
    done <tests.txt
    [[ $tool == memcheck ]] || continue
    if [[ -d fashion-mnist ]]; then
      sanitize memcheck_resnet_dp memcheck trainers/resnet_dp \
        --devices=cuda:0 --epochs=1 --limit=256 --test_limit=128 --batch_size=64
      sanitize memcheck_lenet_scratch memcheck trainers/lenet_scratch \
        --devices=cuda:0 --epochs=1 --limit=1024 --test_limit=256
    fi
  done
fi

# Limits: a batch past the GPU's memory, or past cuDNN's 2^31 - 1 elements
# per tensor, either trains or ends with exit 1 and one line naming the
# shortage and what fits; never an abort (134) or a corrupted heap. (On
# the H100 the one-GPU trainer once aborted at every batch from 24000.)
limit_case() {  # name, program and flags
  local name="$1" log="logs/limits_$1.log"
  shift
  if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "limits $name: SKIPPED: no GPU"
    skipped=$((skipped + 1))
    return
  fi
  if [[ ! -d fashion-mnist && $1 == trainers/* ]]; then
    echo "limits $name: SKIPPED: no data (build the bundle with --with_data)"
    skipped=$((skipped + 1))
    return
  fi
  timeout 900 "$@" >"$log" 2>&1
  local rc=$? line
  line="$(grep -m1 ': error: ' "$log" || tail -n 1 "$log")"
  if ((rc == 0)) || { ((rc == 1)) &&
    grep -qE 'is out of memory: asked for|cuDNN takes at most' "$log" &&
    ! grep -qE 'corrupted|terminate called|double free|Aborted \(core' "$log"; }; then
    result "limits $name: PASSED (exit $rc): $line"
    passed=$((passed + 1))
  else
    result "limits $name: FAILED (exit $rc): $line"
    failed=$((failed + 1))
  fi
}
if want limits; then
  for b in 24000 32000 60000; do
    limit_case "resnet_dp_$b" trainers/resnet_dp --devices=cuda:0 --epochs=1 \
      --batch_size=$b --limit=$b --test_limit=1000
  done
  limit_case resnet_dp_2x_40000 trainers/resnet_dp --devices=cuda:0,cuda:0 \
    --epochs=1 --batch_size=40000 --limit=40000 --test_limit=1000
  limit_case lenet_scratch_60000 trainers/lenet_scratch --devices=cuda:0 \
    --epochs=1 --batch_size=60000 --test_limit=1000
  for b in 24000 40000 60000; do
    limit_case "train_bench_$b" nn/bench/train_bench --device=cuda:0 \
      --model=resnet18 --batch_size=$b --steps=1 --warmup=0
  done
fi

# The trainers on the GPU, end to end (needs the data: gpu_bundle.sh
# --with_data): each closing line, and a pass when the test accuracy
# reaches the chapter's. RINGLET_E2E_EPOCHS (default 10) shortens them.
e2e() {  # name, minimum test accuracy, program and flags
  local name="$1" minimum="$2" log
  shift 2
  log="logs/e2e_$name.log"
  if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "e2e $name: SKIPPED: no GPU"
    skipped=$((skipped + 1))
    return
  fi
  if [[ ! -d fashion-mnist ]]; then
    echo "e2e $name: SKIPPED: no data (build the bundle with --with_data)"
    skipped=$((skipped + 1))
    return
  fi
  timeout 1800 "$@" >"$log" 2>&1
  local rc=$? closing accuracy
  closing="$(grep '^test acc:' "$log" | tail -n 1)"
  accuracy="$(echo "$closing" | sed -n 's/^test acc: \([0-9.]*\).*/\1/p')"
  if ((rc == 0)) && [[ -n "$accuracy" ]] &&
    python3 -c "import sys; sys.exit(not float('$accuracy') >= $minimum)"; then
    result "e2e $name: PASSED: $closing"
    passed=$((passed + 1))
  else
    result "e2e $name: FAILED (exit $rc): ${closing:-$(tail -n 1 "$log")}"
    failed=$((failed + 1))
  fi
}
epochs="${RINGLET_E2E_EPOCHS:-10}"
resnet_min=0 lenet_min=0  # Shortened runs only have to finish.
if ((epochs >= 10)); then resnet_min=0.90 lenet_min=0.83; fi
want e2e && e2e resnet_dp_cuda0 "$resnet_min" \
  trainers/resnet_dp --devices=cuda:0 --epochs="$epochs"
want e2e && e2e lenet_scratch_cuda0 "$lenet_min" \
  trainers/lenet_scratch --devices=cuda:0 --epochs="$epochs"
# Each trainer on the GPU against the same run on a CPU device (same seed,
# same batches), and a second CPU run with another thread count, whose
# other order of additions shows how far rounding alone moves the curve.
# Pass: every epoch's training loss on the GPU within max(FLOOR, 2x the two
# CPU runs' largest gap) of the CPU's. What the first H100 sitting showed
# (docs/gpu.md): ResNet-18 at lr 0.1, 40 steps an epoch, is chaotic (1 and
# 2 CPU threads 6% apart after one epoch; GPU runs 1.03-1.29 at epoch 2,
# CPU runs 0.94-1.12); at lr 0.02, 20 steps an epoch, GPU runs were 4.5%
# and 7.8% above the CPU's second epoch, two CPU runs 2.7% apart. Hence
# ResNet's floor of 10%: a GPU step computing something else (one wrong
# gradient) lands far outside it; LeNet's curves agree to ~1%, floor 5%.
same_curve() {  # name, floor, program and flags
  local name="$1" floor="$2"
  shift 2
  if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "curve $name: SKIPPED: no GPU"
    skipped=$((skipped + 1))
    return
  fi
  if [[ ! -d fashion-mnist ]]; then
    echo "curve $name: SKIPPED: no data (build the bundle with --with_data)"
    skipped=$((skipped + 1))
    return
  fi
  local run verdict
  for run in "cpu --devices=cpu:1" "cpu4 --devices=cpu:1 --threads_per_device=4" \
    "cuda --devices=cuda:0"; do
    local tag="${run%% *}" flags="${run#* }"
    # shellcheck disable=SC2086  # flags are words on purpose
    if ! timeout 1200 "$@" $flags --seed=5 \
      --metrics_out="logs/curve_${name}_${tag}.jsonl" \
      >"logs/curve_${name}_${tag}.log" 2>&1; then
      echo "curve $name: FAILED on $flags: $(tail -n 1 "logs/curve_${name}_${tag}.log")"
      failed=$((failed + 1))
      return
    fi
  done
  if verdict="$(python3 - "logs/curve_${name}_cpu.jsonl" \
    "logs/curve_${name}_cpu4.jsonl" "logs/curve_${name}_cuda.jsonl" \
    "$floor" <<'PY'
import json, sys
def losses(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    return [r["loss"] for r in rows if "epoch" in r and "loss" in r]
cpu, cpu4, gpu = (losses(p) for p in sys.argv[1:4])
def gap(a, b):
    return max(abs(x - c) / abs(c) for c, x in zip(a, b)) if a else 1
spread, worst = gap(cpu, cpu4), gap(cpu, gpu)
bound = max(float(sys.argv[4]), 2 * spread)
print("cpu %s, cpu 4 threads %s, gpu %s; gpu off by %.1f%%, bound %.1f%% "
      "(threads alone: %.1f%%)" % (
          [round(c, 4) for c in cpu], [round(c, 4) for c in cpu4],
          [round(g, 4) for g in gpu], 100 * worst, 100 * bound, 100 * spread))
# A loss that never fell would make the comparison say nothing.
learned = len(cpu) > 1 and cpu[-1] < 0.9 * cpu[0]
if not learned:
    print("the CPU run's loss did not fall by 10%: train longer")
sys.exit(not (learned and len(cpu) == len(gpu) and worst <= bound))
PY
  )"; then
    echo "curve $name: PASSED: $verdict"
    passed=$((passed + 1))
  else
    echo "curve $name: FAILED: $verdict"
    failed=$((failed + 1))
  fi
}
want curves && same_curve lenet_scratch 0.05 trainers/lenet_scratch --epochs=4 \
  --test_limit=1000
want curves && same_curve resnet_dp 0.10 trainers/resnet_dp --epochs=2 --limit=1280 \
  --test_limit=100 --batch_size=64 --lr=0.02

# The book's own programs in PyTorch on the same GPU, for the comparison.
peer() {  # name, program
  local name="$1" program="$2" log="logs/peer_$1.log"
  if ! python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null ||
    [[ ! -d fashion-mnist ]]; then
    echo "peer $name: did not run (needs PyTorch with a GPU and the data)"
    return
  fi
  if timeout 1800 python3 book_torch.py --program="$program" \
    --devices=cuda:0 --epochs="$epochs" >"$log" 2>&1; then
    result "peer $name: $(grep '^test acc:' "$log" | tail -n 1)"
  else
    echo "peer $name: failed: $(tail -n 1 "$log")"
  fi
}
want peers && peer book_concise_cuda0 concise
want peers && peer book_scratch_cuda0 scratch
# Two replicas sharing the GPU (ring): the multi-device path on one GPU.
want e2e && e2e resnet_dp_2x_cuda0 0 trainers/resnet_dp --devices=cuda:0,cuda:0 \
  --epochs=1 --limit=12800 --test_limit=2000
want e2e && e2e lenet_scratch_2x_cuda0 0 trainers/lenet_scratch --devices=cuda:0,cuda:0 \
  --epochs=1

# Quick benchmarks: one JSON object each, or the reason they did not run.
bench() {
  local name="$1"
  shift
  local output line
  if output="$(timeout 600 "$@" 2>&1)"; then
    while read -r line; do
      result "bench $name: $line"
    done < <(echo "$output" | grep '^{')
  else
    result "bench $name: did not run: $(echo "$output" | tail -n 1)"
  fi
}
# On the GPU when there is one, else on the CPU; the PyTorch peer beside it
# where PyTorch sees a GPU.
device=cpu batch=32 steps=2  # Without a GPU: only that it runs.
if nvidia-smi -L >/dev/null 2>&1; then device=cuda:0 batch=256 steps=20; fi
want bench && for model in lenet resnet18; do
  bench "train_bench_$model" nn/bench/train_bench --device=$device --model=$model \
    --batch_size=$batch --steps=$steps --json
  if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    bench "pytorch_$model" python3 train_bench_torch.py --device=cuda \
      --model=$model --batch_size=$batch --steps=$steps
  fi
  if [[ $device == cuda:0 ]]; then
    # cuDNN's heuristics beside the measured choices, and both in TF32.
    bench "train_bench_${model}_heuristic" nn/bench/train_bench --device=$device \
      --model=$model --batch_size=$batch --steps=$steps \
      --conv_algorithms=heuristic --json
    bench "train_bench_${model}_tf32" nn/bench/train_bench --device=$device \
      --model=$model --batch_size=$batch --steps=$steps --precision=tf32 --json
    if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
      bench "pytorch_${model}_tf32" python3 train_bench_torch.py --device=cuda \
        --model=$model --batch_size=$batch --steps=$steps --precision=tf32
    fi
  fi
done
# The goals that were missed on the H100 (ResNet-18 at batch 64, TF32;
# LeNet at 1024), each beside PyTorch, and cuDNN's graph API
# (--conv_algorithms=graph) beside the legacy API's measured choices.
goal_bench() {  # name, model, batch, precision
  local name="$1" model="$2" batch="$3" precision="$4" algorithms
  for algorithms in measure graph; do
    bench "goal_${name}_${algorithms}" nn/bench/train_bench --device=cuda:0 \
      --model="$model" --batch_size="$batch" --steps=20 \
      --precision="$precision" --conv_algorithms="$algorithms" --json
  done
  if [[ $model == resnet18 ]]; then  # What folding the biases buys.
    bench "goal_${name}_unfolded" nn/bench/train_bench --device=cuda:0 \
      --model="$model" --batch_size="$batch" --steps=20 \
      --precision="$precision" --fold_conv_biases=false --json
  fi
  if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    bench "goal_${name}_pytorch" python3 train_bench_torch.py --device=cuda \
      --model="$model" --batch_size="$batch" --steps=20 --precision="$precision"
  fi
}
if want bench && [[ $device == cuda:0 ]]; then
  goal_bench resnet18_64_fp32 resnet18 64 fp32
  goal_bench resnet18_256_fp32 resnet18 256 fp32
  goal_bench resnet18_256_tf32 resnet18 256 tf32
  goal_bench lenet_1024_fp32 lenet 1024 fp32
fi
want bench && bench allreduce_nccl collectives/bench/allreduce_bench --backend=nccl --ranks=1 \
  --min_bytes=1M --max_bytes=64M --factor=8 --json

# A trainer run twice with different flags, A then B: each run's second
# epoch (warm: the first pays for cuDNN's algorithm search), its images/s
# from --metrics_out, and step_time_ratio = B's step time over A's.
# Without a GPU (CPU devices given), a few steps: only that it runs.
trainer_pair() {  # bench name, program, batch, steps, flags A, flags B
  local name="$1" program="$2" batch="$3" steps="$4" a="$5" b="$6"
  if [[ ! -d fashion-mnist ]]; then
    result "bench $name: did not run (no data: gpu_bundle.sh --with_data)"
    return
  fi
  [[ $device != cuda:0 ]] && steps=2
  local flags line rates=()
  for flags in "$a" "$b"; do
    local log="logs/${name}_${#rates[@]}"
    # shellcheck disable=SC2086  # Flags split on purpose.
    if ! timeout 600 "$program" $flags --batch_size="$batch" --epochs=2 \
      --limit=$((batch * steps)) --test_limit=64 --seed=5 \
      --metrics_out="$log.jsonl" >"$log.log" 2>&1; then
      result "bench $name: did not run: $(tail -n 1 "$log.log")"
      return
    fi
    rates+=("$(python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print([r for r in rows if "epoch" in r][-1]["images_per_sec"])' "$log.jsonl")")
  done
  python3 -c 'import json, sys
a, b = float(sys.argv[3]), float(sys.argv[4])
print(json.dumps({"flags": [sys.argv[5], sys.argv[6]],
                  "batch_size": int(sys.argv[2]), "images_per_sec": [round(a), round(b)],
                  "step_time_ratio": round(a / b, 3)}))' \
    "$name" "$batch" "${rates[0]}" "${rates[1]}" "$a" "$b" |
    while read -r line; do result "bench $name: $line"; done
}
# Two replicas sharing one GPU against one at the same total batch (goals:
# step_time_ratio <= 1.05 for resnet_dp, 1.10 for lenet_scratch), and what queueing each step before
# reading the last one buys (--overlap_steps=false against the default).
one="--devices=cuda:0" two="--devices=cuda:0,cuda:0"
if [[ $device != cuda:0 ]]; then one="--devices=cpu:1" two="--devices=cpu:2"; fi
want bench && trainer_pair replicas_resnet_dp trainers/resnet_dp 256 40 "$one" "$two"
want bench && trainer_pair replicas_lenet_scratch trainers/lenet_scratch 256 200 "$one" "$two"
want bench && trainer_pair overlap_resnet_dp trainers/resnet_dp 256 40 \
  "$one" "$one --overlap_steps=false"
want bench && trainer_pair overlap_lenet_scratch trainers/lenet_scratch 256 200 \
  "$one" "$one --overlap_steps=false"

# Whole steps as CUDA graphs (train_bench --cuda_graph, the PyTorch peer
# --cuda_graph): what one launch a step buys where the host's launches
# limit the step. Each line also has host_ms_per_step (the host's time to
# queue one step on an idle GPU) beside isolated_step_ms and step_ms: a
# host time near the step time means launch-bound.
graph_bench() {  # name, model, batch
  local name="$1" model="$2" batch="$3" graph
  for graph in false true; do
    bench "graphs_${name}_ringlet_${graph}" nn/bench/train_bench --device=cuda:0 \
      --model="$model" --batch_size="$batch" --steps=30 --cuda_graph=$graph \
      --json
  done
  if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    bench "graphs_${name}_pytorch_false" python3 train_bench_torch.py \
      --device=cuda --model="$model" --batch_size="$batch" --steps=30
    bench "graphs_${name}_pytorch_true" python3 train_bench_torch.py \
      --device=cuda --model="$model" --batch_size="$batch" --steps=30 \
      --cuda_graph
  fi
}
if want graphs && [[ $device == cuda:0 ]]; then
  graph_bench resnet18_64 resnet18 64
  graph_bench resnet18_256 resnet18 256
  graph_bench lenet_256 lenet 256
  graph_bench lenet_1024 lenet 1024
elif want graphs; then
  # Without a GPU: the flag's refusal is what there is to see.
  bench graphs_refused_on_cpu nn/bench/train_bench --device=cpu --cuda_graph=true
fi

# Where a step's GPU time goes, ringlet's train_bench beside PyTorch's peer
# on the configurations whose goals were missed: one profiled step after
# three warm ones, kernels ranked by time (tools/ncu_top.py). Each program
# marks its timed steps (cudaProfilerStart/Stop).
profile() {  # name, model, batch, precision
  local name="$1" model="$2" batch="$3" precision="$4"
  if ! command -v ncu >/dev/null || [[ $device != cuda:0 ]]; then
    echo "profile $name: did not run (needs ncu and a GPU)"
    return
  fi
  local ncu=(ncu --profile-from-start off --metrics gpu__time_duration.sum --csv)
  timeout 600 "${ncu[@]}" nn/bench/train_bench --device=cuda:0 --model="$model"     --batch_size="$batch" --precision="$precision" --steps=1 --warmup=3     >"logs/profile_${name}_ringlet.csv" 2>&1
  python3 ncu_top.py "logs/profile_${name}_ringlet.csv" --label="ringlet $name" |
    sed "s/^/profile $name ringlet: /"
  if python3 -c 'import torch, sys; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
    timeout 600 "${ncu[@]}" python3 train_bench_torch.py --device=cuda \
      --model="$model" --batch_size="$batch" --precision="$precision" \
      --steps=1 --warmup=3 >"logs/profile_${name}_pytorch.csv" 2>&1
    python3 ncu_top.py "logs/profile_${name}_pytorch.csv" --label="pytorch $name" |
      sed "s/^/profile $name pytorch: /"
  fi
}
want profile && profile resnet18_64_fp32 resnet18 64 fp32
want profile && profile resnet18_256_tf32 resnet18 256 tf32
want profile && profile lenet_1024_fp32 lenet 1024 fp32

# The issues' goals from this folder's results so far (tools/bench_goals.py).
if { want bench || want graphs || want e2e || want peers; } &&
  [[ -f logs/results.txt ]]; then
  python3 bench_goals.py logs/results.txt ||
    echo "goals: bench_goals.py failed (see above)"
fi

echo "gpu: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
