#!/usr/bin/env bash
# Runs //data:fashion_mnist_info on the installed data set and on bad input,
# and checks what a person would read and the exit status.
set -uo pipefail
tool="$1"
failures=0

run() {  # run ARGS...: sets $out and $status
  out="$("$tool" "$@" 2>&1)"
  status=$?
}

expect() {  # expect DESCRIPTION PATTERN: PATTERN must match $out
  if grep -Eq -- "$2" <<<"$out"; then
    echo "ok: $1"
  else
    echo "FAIL: $1: no match for /$2/ in:"
    echo "$out"
    failures=$((failures + 1))
  fi
}

expect_status() {  # expect_status DESCRIPTION TEST: e.g. '== 0' or '!= 0'
  if (("$status" $2)); then
    echo "ok: $1 (exit $status)"
  else
    echo "FAIL: $1: exit status $status, wanted $2"
    failures=$((failures + 1))
  fi
}

run --samples=3
expect_status "installed data set" "== 0"
expect "training count" "train +60000 images of 28x28, 60000 labels"
expect "test count" "test +10000 images of 28x28, 10000 labels"
for class in t-shirt trouser pullover dress coat sandal shirt sneaker bag "ankle boot"; do
  expect "histogram row for $class" "^ +[0-9] +$class +6000 +1000$"
done
expect "first image is drawn with its label" "#0 ankle boot"
expect "GPU line" "^GPUs: [0-9]+ usable"

run --data_dir=/nonexistent/fm
expect_status "missing folder" "== 1"
expect "missing folder says how to install" "apt-get install dataset-fashion-mnist"

run --no_such_flag
expect_status "unknown flag" "!= 0"
expect "unknown flag is named" "no_such_flag"

run --help
expect_status "--help" "== 0"
expect "--help lists --data_dir" "--data_dir"

run --samples=99
expect_status "--samples out of range" "!= 0"
expect "--samples range is explained" "samples"

echo "$failures failure(s)"
exit $((failures > 0))
