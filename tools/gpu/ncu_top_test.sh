#!/usr/bin/env bash
# tools/gpu/ncu_top.py on a small ncu CSV (ncu's own messages and a program's
# output mixed in, as run_all.py captures them): kernels grouped by name
# with their arguments cut, units converted, ranked by time; bad input is a
# clear error.
set -euo pipefail
script="tools/gpu/ncu_top.py"
csv="tools/gpu/testdata/ncu_step.csv"
fail() { echo "FAIL: $*" >&2; exit 1; }

out="$(python3 "$script" "$csv" --top=3 --label=step)"
json="$(echo "$out" | tail -n 1)"
python3 - "$json" <<'PY' || fail "JSON line: $json"
import json, sys
j = json.loads(sys.argv[1])
assert j["label"] == "step", j
assert j["launches"] == 5, j                    # fill_forward twice.
assert abs(j["kernel_us"] - 58.75) < 0.1, j     # 2.5+41.5+1.5+12+1.25 us.
names = [k["kernel"] for k in j["top"]]
assert names[0].startswith("sm90_xmma_fprop"), names
assert names[1] == "cudnn::bn_bw_1C11_kernel_new<float, float, float2, 512, true, 1>", names
assert names[2] == "ringlet::nn::cuda::fill_forward_kernel", names
assert j["top"][2]["launches"] == 2 and j["top"][2]["us"] == 4.0, j
PY
all="$(python3 "$script" "$csv" --top=10 | tail -n 1)"
echo "$all" | grep -q '"kernel": "(anonymous namespace)::channel_sums_kernel<256>"' ||
  fail "parentheses inside a name: $all"
echo "$out" | grep -q '^all 4 kernels' || fail "total line: $out"

empty="$(mktemp)"
echo "==PROF== No kernels were profiled." >"$empty"
if err="$(python3 "$script" "$empty" 2>&1)"; then fail "an empty CSV passed"; fi
echo "$err" | grep -q "no CSV rows" || fail "empty CSV message: $err"
if err="$(python3 "$script" /nonexistent.csv 2>&1)"; then fail "a missing file passed"; fi
echo "$err" | grep -q "nonexistent.csv" || fail "missing file message: $err"
echo PASS
