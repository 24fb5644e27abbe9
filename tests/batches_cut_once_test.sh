#!/usr/bin/env bash
# The batch flows one way: the loader (data/) cuts it into this process's
# shards and parallel/'s engine runs them. No program outside data/ and
# parallel/ cuts a batch or picks a process's shards again (d2l's
# split_batch arithmetic, rank-to-shard arithmetic, or the loader's held
# range). Tests may cut their own batches.
#
#   batches_cut_once_test.sh FILE...
set -euo pipefail
(( $# > 0 )) || { echo "no sources given" >&2; exit 1; }
pattern='ShardBatch\(|SamplesOfShards\(|ShardsOfRanks\(|batch\.(held|first)\b'
bad=0
for f in "$@"; do
  case "$f" in *_test.cc) continue ;; esac
  if grep -nE "$pattern" "$f"; then
    echo "FAIL: $f cuts a batch or picks shards itself; take the loader's" \
      "Batch::Local() with the engine's TrainLayout()/EvalLayout()" >&2
    bad=1
  fi
done
echo "checked $# files"
exit $bad
