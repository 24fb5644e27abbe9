#!/usr/bin/env bash
# Runs //data:fashion_mnist_info on the installed data set and on bad input,
# and checks what a person would read.
set -uo pipefail
tool="$1"
failures=0

expect() {  # expect DESCRIPTION PATTERN TEXT
  if grep -Eq -- "$2" <<<"$3"; then
    echo "ok: $1"
  else
    echo "FAIL: $1: no match for /$2/ in:"
    echo "$3"
    failures=$((failures + 1))
  fi
}

out="$("$tool" --samples=3 2>&1)"
expect "exit status 0" "." "$out"
expect "training count" "train +60000 images of 28x28, 60000 labels" "$out"
expect "test count" "test +10000 images of 28x28, 10000 labels" "$out"
for class in t-shirt trouser pullover dress coat sandal shirt sneaker bag "ankle boot"; do
  expect "histogram row for $class" "^ +[0-9] +$class +6000 +1000$" "$out"
done
expect "first image is drawn with its label" "#0 ankle boot" "$out"
expect "GPU line" "^GPUs: [0-9]+ usable" "$out"

out="$("$tool" --data_dir=/nonexistent/fm 2>&1)"
status=$?
expect "missing folder exits 1 (got $status)" "." "$([[ $status == 1 ]] && echo yes)"
expect "missing folder says how to install" "apt-get install dataset-fashion-mnist" "$out"

out="$("$tool" --no_such_flag 2>&1)"
status=$?
expect "unknown flag exits non-zero (got $status)" "." "$([[ $status != 0 ]] && echo yes)"
expect "unknown flag is named" "no_such_flag" "$out"

out="$("$tool" --help 2>&1)"
status=$?
expect "--help exits 0 (got $status)" "." "$([[ $status == 0 ]] && echo yes)"
expect "--help lists --data_dir" "--data_dir" "$out"

out="$("$tool" --samples=99 2>&1)"
status=$?
expect "--samples out of range exits non-zero (got $status)" "." "$([[ $status != 0 ]] && echo yes)"

echo "$failures failure(s)"
exit $((failures > 0))
