#!/usr/bin/env bash
# gpu_bundle.sh: builds ringlet's GPU tests, benchmarks and trainers here and
# writes a folder that runs on another machine (one with a GPU) without
# Bazel:
#
#   tools/gpu_bundle.sh --out=/tmp/bundle [--with_data] [--without_onednn]
#   scp -r /tmp/bundle gpu-host: && ssh gpu-host bundle/run_all.py
#
# --without_onednn builds it all with --config=without_onednn (CPU
# convolutions through Eigen, nothing links oneDNN): the bundle for
# `run_all.py sanitize`, since compute-sanitizer stops every program that
# links oneDNN before its first CUDA call.
#
# The folder mirrors bazel-bin (each binary at its package path, the shared
# libraries in _solib_k8, as their run paths expect; packed in
# programs.tar.xz, which run_all.py unpacks in place first), plus
# run_all.py, the PyTorch peer script and, with --with_data, the
# Fashion-MNIST files.
# System libraries the binaries link that a bare machine may lack (oneDNN,
# OpenMPI, ...) go to syslib/, the large ones xz-compressed; run_all.py
# unpacks them and uses them only for libraries the machine does not have.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="" with_data=0 config=()
for arg in "$@"; do
  case "$arg" in
    --out=*) out="${arg#--out=}" ;;
    --with_data) with_data=1 ;;
    --without_onednn) config=(--config=without_onednn) ;;
    -h | --help)
      sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "gpu_bundle: unknown argument '$arg' (see --help)" >&2
      exit 2
      ;;
  esac
done
[[ -n "$out" ]] || { echo "gpu_bundle: --out=DIR is required (see --help)" >&2; exit 2; }
if [[ -e "$out" && -n "$(ls -A "$out" 2>/dev/null)" ]]; then
  echo "gpu_bundle: $out exists and is not empty; give a new folder" >&2
  exit 2
fi

cd "$root"
# Every gpu-tagged test, the tests with GPU cases among others (tensors,
# device probe, allocator), and the programs the GPU issues measure.
mapfile -t tests < <(./bazelw query 'attr(tags, "\bgpu\b", tests(//...))' 2>/dev/null)
((${#tests[@]} > 0)) || { echo "gpu_bundle: no gpu-tagged test found" >&2; exit 1; }
tests+=(//nn:tensor_test //nn:state_file_test //gpu:device_probe_test
  //nn/cuda:caching_allocator_test //trainers:lenet_replicas_test)
programs=(//nn/bench:train_bench //nn/bench:cuda_conv_layout_bench
  //collectives/bench:allreduce_bench
  //trainers:lenet_scratch //trainers:resnet_dp //examples/mlp:train_mlp
  //examples/tokens:train_tokens)
# compute-sanitizer's canaries (gpu/canaries; run_all.py canaries).
mapfile -t canaries < <(./bazelw query 'kind(cc_binary, //gpu/canaries:all)' \
  2>/dev/null)
programs+=("${canaries[@]}")
./bazelw build -c opt "${config[@]}" "${tests[@]}" "${programs[@]}"

bin="$(./bazelw info -c opt "${config[@]}" bazel-bin 2>/dev/null)"
mkdir -p "$out"
# What run_all.py prints first: which commit and build this is.
{
  echo "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -n)"
  if ((${#config[@]})); then
    echo "oneDNN: no (--config=without_onednn: CPU convolutions through Eigen)"
  else
    echo "oneDNN: yes"
  fi
} >"$out/bundle.txt"
copy_target() {  # //pkg:name -> $out/pkg/name
  local label="$1" pkg name
  pkg="${label#//}"
  name="${pkg#*:}"
  pkg="${pkg%%:*}"
  mkdir -p "$out/$pkg"
  cp "$bin/$pkg/$name" "$out/$pkg/$name"
  echo "$pkg/$name"
}
# Libraries under /usr/lib that a binary links, apart from the C and C++
# runtimes every Linux has. Over 256 KiB: xz-compressed (the bundle, the data
# and the working tree must fit the device tool's 64 MiB).
copy_system_libraries() {
  mkdir -p "$out/syslib"
  local lib
  while read -r lib; do
    if (($(stat -L -c %s "$lib") > 256 * 1024)); then
      xz -T0 -6 -c "$lib" >"$out/syslib/$(basename "$lib").xz"
    else
      cp -L "$lib" "$out/syslib/"
    fi
  done < <(find "$out" -type f -perm -u+x ! -name '*.sh' ! -path '*/syslib/*' \
    -exec ldd {} + 2>/dev/null | awk '$2 == "=>" && $3 ~ "^/usr/lib|^/lib" {print $3}' |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    sort -u)
}
: >"$out/tests.txt"
for t in "${tests[@]}"; do copy_target "$t" >>"$out/tests.txt"; done
for p in "${programs[@]}"; do copy_target "$p" >/dev/null; done
cp -rL "$bin/_solib_k8" "$out/_solib_k8"  # -L: the files, not links into bazel-out
copy_system_libraries
# The programs travel xz-compressed (a quarter of their size: the bundle
# with the data must fit the GPU machine's 64 MiB carry); run_all.py
# unpacks them where they were, once.
(
  cd "$out"
  mapfile -t packed < <(cat tests.txt; for p in "${programs[@]}"; do
    p="${p#//}"; echo "${p%%:*}/${p#*:}"; done)
  tar -cf - "${packed[@]}" _solib_k8 | xz -T0 -6 >programs.tar.xz
  rm -rf "${packed[@]}" _solib_k8
  find . -mindepth 1 -type d -empty -delete
)
cp tools/gpu/run_all.py "$out/run_all.py"
cp tools/gpu/torchrun_gpu.py "$out/torchrun_gpu.py"
cp nn/bench/train_bench_torch.py "$out/train_bench_torch.py"
cp tools/gpu/ncu_top.py "$out/ncu_top.py"
cp tools/gpu/bench_goals.py "$out/bench_goals.py"
cp trainers/book_torch.py "$out/book_torch.py"
cp trainers/torch_models.py "$out/torch_models.py"
if ((with_data)); then
  mkdir -p "$out/fashion-mnist"
  cp /usr/share/datasets/fashion-mnist/*.gz "$out/fashion-mnist/"
fi
chmod -R u+w "$out"
echo "gpu_bundle: $(du -sh "$out" | cut -f1) in $out: ${#tests[@]} tests," \
  "${#programs[@]} programs; run $out/run_all.py on the GPU machine"
