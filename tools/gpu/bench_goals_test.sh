#!/usr/bin/env bash
# tools/gpu/bench_goals.py on a recorded logs/results.txt: each goal MET,
# MISSED or NOT RUN from the right lines (the latest of a name, GPU lines
# only, the best of ringlet's algorithm choices), and a clear error for a
# missing file.
set -euo pipefail
script="tools/gpu/bench_goals.py"
results="tools/gpu/testdata/run_all_results.txt"
fail() { echo "FAIL: $*" >&2; exit 1; }
out="$(python3 "$script" "$results")"
expect() {  # a line of the output that must be there, whole
  echo "$out" | grep -qxF -- "$1" || fail "missing line: $1
got:
$out"
}
expect "goal ResNet-18 batch 256 fp32 >= 1.0x PyTorch: ringlet 12,199 (measure) img/s, PyTorch 11,147: 1.09x with measure: MET"
expect "goal ResNet-18 batch 64 fp32 >= 1.3x PyTorch: ringlet 7,305 (measure), 8,100 (graph) img/s, PyTorch 8,171: 0.99x with graph: MISSED"
expect "goal ResNet-18 batch 256 TF32 >= 1.3x PyTorch's TF32: NOT RUN (no result for goal_resnet18_256_tf32_measure, goal_resnet18_256_tf32_graph, goal_resnet18_256_tf32_measure_nhwc, goal_resnet18_256_tf32_graph_nhwc, goal_resnet18_256_tf32_pytorch)"
expect "goal ResNet-18 batch 256 bf16 >= 1.5x PyTorch's best bf16: NOT RUN (no result for goal_resnet18_256_bf16_measure, goal_resnet18_256_bf16_graph, goal_resnet18_256_bf16_measure_nhwc, goal_resnet18_256_bf16_graph_nhwc, goal_resnet18_256_bf16_pytorch, goal_resnet18_256_bf16_pytorch_channels_last, goal_resnet18_256_bf16_pytorch_compiled)"
expect "goal LeNet batch 256 fp32 >= 1.4x PyTorch: ringlet 321,517 (train_bench_lenet) img/s, PyTorch 219,298: 1.47x with train_bench_lenet: MET"
expect "goal 2 replicas on one GPU, resnet_dp: step time <= 1.05x one replica's: 1.053x: MISSED"
expect "goal 2 replicas on one GPU, lenet_scratch: step time <= 1.10x one replica's: 1.250x: MISSED"
expect "goal resnet_dp on cuda:0: <= 0.75x the book's sec/epoch at test acc >= 0.90: ringlet 5.7 s at 0.91, the book 7.6 s at 0.86: 0.75x: MET"
expect "goal lenet_scratch on cuda:0: <= 0.75x the book's sec/epoch at test acc >= 0.83: ringlet 0.4 s at 0.84, the book 0.5 s at 0.81: 0.80x: MISSED"
expect "graphs resnet18_64: ringlet 7,300 -> 9,125 img/s (1.25x, host 6.10 of 8.77 ms); pytorch: not run"

# Several PyTorch lines for one goal (eager, channels-last, compiled): the
# fastest is the one to beat.
peers="$(mktemp)"
cat >"$peers" <<'EOF2'
bench goal_resnet18_256_bf16_measure: {"device": "cuda:0", "images_per_sec": 30000, "conv_algorithms": "measure", "gpu_peak_bytes": 1073741824}
bench goal_resnet18_256_bf16_pytorch: {"device": "cuda:0", "images_per_sec": 15000, "gpu_peak_bytes": 3221225472}
bench goal_resnet18_256_bf16_pytorch_channels_last: {"device": "cuda:0", "images_per_sec": 20344, "gpu_peak_bytes": 2147483648}
bench goal_resnet18_256_bf16_pytorch_compiled: {"device": "cuda:0", "images_per_sec": 18417}
e2e resnet_dp_cuda0_bf16: test acc: 0.93, 1.9 sec/epoch on [cuda:0]
e2e resnet_dp_cuda0: test acc: 0.94, 5.7 sec/epoch on [cuda:0]
EOF2
python3 "$script" "$peers" | grep -qxF "goal resnet_dp on cuda:0 --precision=bf16: <= 2.0 s/epoch, test acc within 0.01 of fp32's: bf16 1.9 s at 0.93, fp32 5.7 s at 0.94: MET" ||
  fail "the bf16 e2e goal: $(python3 "$script" "$peers")"
recipe="$(mktemp)"
echo "e2e resnet_dp_cuda0_bf16_recipe: PASSED: test acc: 0.93, 1.9 sec/epoch on [cuda:0]" >"$recipe"
python3 "$script" "$recipe" | grep -qxF "goal resnet_dp on cuda:0 --precision=bf16 --momentum=0.9 --weight_decay=5e-4 --lr_schedule=cosine --warmup_epochs=1, 10 epochs: test acc >= 0.93: 0.93 (1.9 s/epoch): MET" ||
  fail "the recipe goal: $(python3 "$script" "$recipe")"
echo "e2e resnet_dp_cuda0_bf16_recipe: PASSED: test acc: 0.92, 1.9 sec/epoch on [cuda:0]" >"$recipe"
python3 "$script" "$recipe" | grep -qF "test acc >= 0.93: 0.92 (1.9 s/epoch): MISSED" ||
  fail "the recipe goal below its bar: $(python3 "$script" "$recipe")"
python3 "$script" "$peers" | grep -qxF "goal resnet_dp on cuda:0 --precision=bf16 --momentum=0.9 --weight_decay=5e-4 --lr_schedule=cosine --warmup_epochs=1, 10 epochs: test acc >= 0.93: NOT RUN (no closing line for resnet_dp_cuda0_bf16_recipe)" ||
  fail "the recipe goal without its line: $(python3 "$script" "$peers")"
python3 "$script" "$peers" | grep -qxF "goal ResNet-18 batch 256 bf16 >= 1.5x PyTorch's best bf16: ringlet 30,000 (measure) img/s, PyTorch 20,344: 1.47x with measure: MISSED" ||
  fail "the best PyTorch line was not the one compared: $(python3 "$script" "$peers")"

# A bf16 configuration: ringlet with and without a CUDA graph, PyTorch's
# eager step alone (its peer captures float32 only).
graphs="$(mktemp)"
cat >"$graphs" <<'EOF2'
bench graphs_resnet18_64_bf16_ringlet_false: {"device": "cuda:0", "images_per_sec": 8900.0, "step_ms": 7.19, "host_ms_per_step": 12.9}
bench graphs_resnet18_64_bf16_ringlet_true: {"device": "cuda:0", "images_per_sec": 11000.0, "step_ms": 5.8, "host_ms_per_step": 0.02}
bench graphs_resnet18_64_bf16_pytorch_false: {"device": "cuda:0", "images_per_sec": 7494.0, "step_ms": 8.54, "host_ms_per_step": 10.2}
EOF2
python3 "$script" "$graphs" | grep -qxF "graphs resnet18_64_bf16: ringlet 8,900 -> 11,000 img/s (1.24x, host 12.90 of 7.19 ms); pytorch 7,494 img/s (no CUDA graph)" ||
  fail "the bf16 graph line: $(python3 "$script" "$graphs")"

# The memory goal against PyTorch's smallest peak (channels-last here).
python3 "$script" "$peers" | grep -qxF "goal GPU memory, ResNet-18 batch 256 bf16 <= 0.5x PyTorch's autocast: ringlet 1,024 MiB, PyTorch 2,048 MiB (goal_resnet18_256_bf16_pytorch_channels_last): 0.50x: MET" ||
  fail "the memory goal: $(python3 "$script" "$peers")"
expect "goal GPU memory, ResNet-18 batch 256 bf16 <= 0.5x PyTorch's autocast: NOT RUN (no gpu_peak_bytes for goal_resnet18_256_bf16_measure, goal_resnet18_256_bf16_pytorch, goal_resnet18_256_bf16_pytorch_channels_last, goal_resnet18_256_bf16_pytorch_compiled)"

# The layout lines: NHWC against NCHW per precision, from the layout bench.
layouts="$(mktemp)"
cat >"$layouts" <<'EOF2'
bench conv_layout_bf16_nchw: {"model": "resnet18", "batch_size": 256, "precision": "bf16", "layout": "nchw", "conv_ms": 8.0}
bench conv_layout_bf16_nhwc: {"model": "resnet18", "batch_size": 256, "precision": "bf16", "layout": "nhwc", "conv_ms": 6.0}
EOF2
python3 "$script" "$layouts" | grep -qxF "layout bf16: ResNet-18's convolutions at batch 256, NCHW 8.00 ms, NHWC 6.00 ms (0.75x): NHWC is faster" ||
  fail "the layout line: $(python3 "$script" "$layouts")"
python3 "$script" "$layouts" | grep -qxF "layout fp32: not run" ||
  fail "a layout without lines: $(python3 "$script" "$layouts")"

# ResNet-18's whole step in NHWC beside NCHW: the goal takes the fastest
# of all four lines and names its layout; the layout line compares each
# layout's best.
steps="$(mktemp)"
cat >"$steps" <<'EOF2'
bench goal_resnet18_256_bf16_measure: {"device": "cuda:0", "images_per_sec": 19000, "conv_algorithms": "measure", "layout": "nchw"}
bench goal_resnet18_256_bf16_graph: {"device": "cuda:0", "images_per_sec": 20000, "conv_algorithms": "graph", "layout": "nchw"}
bench goal_resnet18_256_bf16_measure_nhwc: {"device": "cuda:0", "images_per_sec": 21000, "conv_algorithms": "measure", "layout": "nhwc"}
bench goal_resnet18_256_bf16_graph_nhwc: {"device": "cuda:0", "images_per_sec": 25000, "conv_algorithms": "graph", "layout": "nhwc"}
bench goal_resnet18_256_bf16_pytorch_channels_last: {"device": "cuda:0", "images_per_sec": 20000}
EOF2
python3 "$script" "$steps" | grep -qxF "goal ResNet-18 batch 256 bf16 >= 1.5x PyTorch's best bf16: ringlet 19,000 (measure), 20,000 (graph), 21,000 (measure, nhwc), 25,000 (graph, nhwc) img/s, PyTorch 20,000: 1.25x with graph, nhwc: MISSED" ||
  fail "the bf16 goal over both layouts: $(python3 "$script" "$steps")"
python3 "$script" "$steps" | grep -qxF "layout step resnet18_256_bf16: NCHW 20,000 img/s, NHWC 25,000 (1.25x): NHWC is faster" ||
  fail "the step layout line: $(python3 "$script" "$steps")"
python3 "$script" "$steps" | grep -qxF "layout step resnet18_256_tf32: not run" ||
  fail "a step layout without lines: $(python3 "$script" "$steps")"

# Only GPU lines count: a CPU run's train_bench line alone is NOT RUN.
cpu_only="$(mktemp)"
head -n 1 "$results" >"$cpu_only"
python3 "$script" "$cpu_only" | grep -qxF "goal LeNet batch 256 fp32 >= 1.4x PyTorch: NOT RUN (no result for train_bench_lenet, pytorch_lenet)" ||
  fail "a CPU line counted: $(python3 "$script" "$cpu_only")"

if err="$(python3 "$script" /nonexistent.txt 2>&1)"; then fail "a missing file passed"; fi
echo "$err" | grep -q "cannot read /nonexistent.txt" || fail "missing file message: $err"
echo PASS
