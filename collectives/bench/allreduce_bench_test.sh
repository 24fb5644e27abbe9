#!/usr/bin/env bash
# The benchmark's correctness, not its speed: every row checks out (#wrong
# 0), the JSON keys are there, and the ring sends exactly 2(n-1)/n of each
# size per rank while the naive root sends (n-1) times it.
set -uo pipefail
bench="$1"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

for backend in ring naive; do
  for ranks in 2 4; do
    out="$("$bench" --backend=$backend --ranks=$ranks --min_bytes=1M \
      --max_bytes=4M --factor=2 --iters=2 --warmup=1 --json)" ||
      fail "$backend $ranks ranks exited $?"
    rows=0
    while read -r row; do
      rows=$((rows + 1))
      for key in bytes count time_us algbw_gbps busbw_gbps wrong \
        bytes_sent_per_rank; do
        grep -q "\"$key\":" <<<"$row" || fail "no key $key in: $row"
      done
      bytes="$(sed -E 's/.*"bytes":([0-9]+).*/\1/' <<<"$row")"
      sent="$(sed -E 's/.*"bytes_sent_per_rank":([0-9]+).*/\1/' <<<"$row")"
      grep -q '"wrong":0,' <<<"$row" || fail "wrong results: $row"
      if [[ $backend == ring ]]; then
        want=$((2 * (ranks - 1) * bytes / ranks))
      else
        want=$(((ranks - 1) * bytes))
      fi
      [[ "$sent" == "$want" ]] ||
        fail "$backend $ranks ranks, $bytes bytes: sent $sent, want $want"
    done <<<"$out"
    # Out of place and in place for each of 3 sizes.
    [[ $rows == 6 ]] || fail "$backend $ranks ranks: $rows rows, want 6"
    [[ "$(grep -c '"in_place":true' <<<"$out")" == 3 ]] ||
      fail "$backend $ranks ranks: not 3 in-place rows"
  done
done

# nccl-tests' short flags: -b -e -f -g -n -w.
out="$("$bench" -b 1M -e 4M -f 2 -g 2 -n 2 -w 1 --json)" ||
  fail "short flags: exit $?"
[[ "$(grep -c '"bytes":' <<<"$out")" == 6 ]] ||
  fail "-b 1M -e 4M -f 2: not 6 rows: $out"
[[ "$(grep -c '"ranks":2,' <<<"$out")" == 6 ]] || fail "-g 2: not 2 ranks: $out"

# The table as nccl-tests prints it: both placements, units, the footer.
table="$("$bench" --ranks=2 --min_bytes=1K --max_bytes=4K --iters=2)" ||
  fail "the table run failed"
for want in "out-of-place" "in-place" "redop" "(GB/s)" "(elements)" \
  "# Out of bounds values : 0 OK" "# Avg bus bandwidth    : "; do
  [[ "$table" == *"$want"* ]] || fail "table lacks '$want': $table"
done
[[ "$(grep -c ' float32    sum ' <<<"$table")" == 3 ]] ||
  fail "table rows lack type and redop: $table"
# repro_sum beside the plain sum, size by size, with the ratio of busbw.
table="$("$bench" --ranks=3 --op=repro_sum --min_bytes=4K --max_bytes=8K \
  --iters=2)" || fail "repro_sum: exit $?"
[[ "$(grep -c ' float32    sum ' <<<"$table")" == 2 &&
  "$(grep -c ' float32 repro_sum .*x .*x$' <<<"$table")" == 2 &&
  "$table" == *"vs sum"*"# Out of bounds values : 0 OK"* ]] ||
  fail "repro_sum rows lack the sum beside them: $table"
out="$("$bench" --ranks=2 --op=repro_sum --dtype=bf16 -b 1K -e 1K --json)" ||
  fail "repro_sum json: exit $?"
[[ "$(grep -c '"op":"sum".*"wrong":0' <<<"$out")" == 2 &&
  "$(grep -c '"op":"repro_sum".*"wrong":0.*"vs_sum":' <<<"$out")" == 2 ]] ||
  fail "repro_sum json rows: $out"
"$bench" --backend=carrier-pigeon >/dev/null 2>&1
[[ $? == 2 ]] || fail "bad backend: exit code not 2"
"$bench" --max_bytes=12X >/dev/null 2>&1 && fail "bad size accepted"
# Once a wrap to 0, and a raw std::bad_alloc.
err="$("$bench" --max_bytes=17179869184G 2>&1 >/dev/null)" &&
  fail "a size past 64 bits was accepted"
[[ "$err" == *"more bytes than 64 bits can count"* ]] || fail "message: $err"
err="$("$bench" --min_bytes=64G --max_bytes=64G 2>&1 >/dev/null)" &&
  fail "64G accepted"
[[ "$err" == *"needs 384.0 GiB for 2 ranks"*"of the host's memory"* ]] ||
  fail "message: $err"
"$bench" --help | grep -q -- "--backend TEXT:{.*}=ring" || fail "--help lacks --backend's default"
# 64 ranks on a few cores: a row is bounded by time, not 100,000 calls
# (before, no output in minutes).
out="$(timeout 120 "$bench" --ranks=64 -b 4 -e 4 -n 1 -w 0 --json)" ||
  fail "64 ranks: exit $? (124: still running after 120 s)"
[[ "$(grep -c '"wrong":0,' <<<"$out")" == 2 ]] || fail "64 ranks: $out"

echo "$failures failure(s)"
exit $((failures > 0))
