#!/usr/bin/env python3
"""The GPU issues' goals, met or not, from what run_all.py printed.

  python3 bench_goals.py logs/results.txt

run_all.py keeps every `bench NAME: {json}`, `e2e NAME: ...` and
`peer NAME: ...` line it prints in logs/results.txt (the latest line of a
name wins) and ends its bench, graphs, e2e and peers parts with this
summary: one line per goal, `goal <what>: <numbers>: MET|MISSED|NOT RUN`,
then one line per CUDA-graph comparison. Speed goals are ratios against
PyTorch on the same GPU in the same run.
"""
import argparse
import json
import re
import sys

# (what, ringlet lines (best taken), PyTorch line or lines (best taken:
# eager, channels-last, compiled), least ratio)
SPEED_GOALS = [
    ("ResNet-18 batch 256 fp32 >= 1.0x PyTorch",
     ["goal_resnet18_256_fp32_measure", "goal_resnet18_256_fp32_graph",
      "goal_resnet18_256_fp32_measure_nhwc", "goal_resnet18_256_fp32_graph_nhwc"],
     "goal_resnet18_256_fp32_pytorch", 1.0),
    ("ResNet-18 batch 64 fp32 >= 1.3x PyTorch",
     ["goal_resnet18_64_fp32_measure", "goal_resnet18_64_fp32_graph",
      "goal_resnet18_64_fp32_measure_nhwc", "goal_resnet18_64_fp32_graph_nhwc"],
     "goal_resnet18_64_fp32_pytorch", 1.3),
    ("ResNet-18 batch 256 TF32 >= 1.3x PyTorch's TF32",
     ["goal_resnet18_256_tf32_measure", "goal_resnet18_256_tf32_graph",
      "goal_resnet18_256_tf32_measure_nhwc", "goal_resnet18_256_tf32_graph_nhwc"],
     "goal_resnet18_256_tf32_pytorch", 1.3),
    ("ResNet-18 batch 256 bf16 >= 1.5x PyTorch's best bf16",
     ["goal_resnet18_256_bf16_measure", "goal_resnet18_256_bf16_graph",
      "goal_resnet18_256_bf16_measure_nhwc", "goal_resnet18_256_bf16_graph_nhwc"],
     ["goal_resnet18_256_bf16_pytorch",
      "goal_resnet18_256_bf16_pytorch_channels_last",
      "goal_resnet18_256_bf16_pytorch_compiled"], 1.5),
    ("ResNet-18 batch 64 bf16 >= 1.5x PyTorch's best bf16",
     ["goal_resnet18_64_bf16_measure", "goal_resnet18_64_bf16_graph",
      "goal_resnet18_64_bf16_measure_nhwc", "goal_resnet18_64_bf16_graph_nhwc"],
     ["goal_resnet18_64_bf16_pytorch",
      "goal_resnet18_64_bf16_pytorch_channels_last",
      "goal_resnet18_64_bf16_pytorch_compiled"], 1.5),
    ("LeNet batch 1024 fp32 >= 1.0x PyTorch",
     ["goal_lenet_1024_fp32_measure", "goal_lenet_1024_fp32_graph"],
     "goal_lenet_1024_fp32_pytorch", 1.0),
    ("LeNet batch 256 fp32 >= 1.4x PyTorch",
     ["train_bench_lenet"], "pytorch_lenet", 1.4),
]
# (what, ringlet's bench line, PyTorch's lines (the least taken), largest
# ratio) of gpu_peak_bytes: the most each allocator had in use in the timed
# steps (torch.cuda.max_memory_allocated).
MEMORY_GOALS = [
    ("GPU memory, ResNet-18 batch 256 bf16 <= 0.5x PyTorch's autocast",
     "goal_resnet18_256_bf16_measure",
     ["goal_resnet18_256_bf16_pytorch",
      "goal_resnet18_256_bf16_pytorch_channels_last",
      "goal_resnet18_256_bf16_pytorch_compiled"], 0.5),
]
# (what, bench line, largest step-time ratio)
REPLICA_GOALS = [
    ("2 replicas on one GPU, resnet_dp: step time <= 1.05x one replica's",
     "replicas_resnet_dp", 1.05),
    ("2 replicas on one GPU, lenet_scratch: step time <= 1.10x one replica's",
     "replicas_lenet_scratch", 1.10),
]
# (what, e2e line, peer line, largest time ratio, least test accuracy)
BOOK_GOALS = [
    ("resnet_dp on cuda:0: <= 0.75x the book's sec/epoch at test acc >= 0.90",
     "resnet_dp_cuda0", "book_concise_cuda0", 0.75, 0.90),
    ("lenet_scratch on cuda:0: <= 0.75x the book's sec/epoch at test acc >= 0.83",
     "lenet_scratch_cuda0", "book_scratch_cuda0", 0.75, 0.83),
]
# (what, bf16 e2e line, float32 e2e line, most sec/epoch, largest accuracy
# loss)
PRECISION_GOALS = [
    ("resnet_dp on cuda:0 --precision=bf16: <= 2.0 s/epoch, test acc within "
     "0.01 of fp32's", "resnet_dp_cuda0_bf16", "resnet_dp_cuda0", 2.0, 0.01),
]
STEP_LAYOUT_CONFIGS = ["resnet18_256_fp32", "resnet18_64_fp32",
                       "resnet18_256_tf32", "resnet18_256_bf16",
                       "resnet18_64_bf16"]
# (what, e2e line, least test accuracy)
RECIPE_GOALS = [
    ("resnet_dp on cuda:0 --precision=bf16 --momentum=0.9 "
     "--weight_decay=5e-4 --lr_schedule=cosine --warmup_epochs=1, 10 epochs: "
     "test acc >= 0.93", "resnet_dp_cuda0_bf16_recipe", 0.93),
]
GRAPH_CONFIGS = ["resnet18_64", "resnet18_256", "lenet_256", "lenet_1024",
                 "resnet18_64_bf16", "resnet18_256_bf16"]

LINE = re.compile(r"^(bench|e2e|peer) ([A-Za-z0-9_]+): (.*)$")
BOOK_LINE = re.compile(r"test acc: ([0-9.]+), ([0-9.]+) sec/epoch")


def read_results(path):
    """{(kind, name): text}, the latest line of each name."""
    results = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                m = LINE.match(line.strip())
                if m:
                    results[(m.group(1), m.group(2))] = m.group(3)
    except OSError as e:
        sys.exit(f"bench_goals: cannot read {path}: {e.strerror}")
    return results


def bench_json(results, name, gpu_only=False):
    """The JSON of bench line `name`; with gpu_only, only a GPU's (a CPU
    run without a GPU only shows that the program runs)."""
    text = results.get(("bench", name), "")
    if not text.startswith("{"):
        return None
    try:
        j = json.loads(text)
    except json.JSONDecodeError:
        return None
    if gpu_only and not str(j.get("device", "")).startswith("cuda"):
        return None
    return j


def book_numbers(text):
    """(test acc, sec/epoch) from a line with the book's closing words."""
    m = BOOK_LINE.search(text or "")
    return (float(m.group(1)), float(m.group(2))) if m else None


def verdict(ok):
    return "MET" if ok else "MISSED"


def shown(ratio):
    """A ratio as printed (two decimals), so a goal and its line agree:
    5.7 s against 7.6 s is 0.75x, within <= 0.75x."""
    return round(ratio, 2)


def speed_goals(results):
    for what, ours, peer, least in SPEED_GOALS:
        rates = {}
        for name in ours:
            j = bench_json(results, name, gpu_only=True)
            if j is not None:
                how = j.get("conv_algorithms", name)
                if j.get("layout", "nchw") != "nchw":
                    how += ", " + j["layout"]
                rates[how] = j["images_per_sec"]
        peers = [peer] if isinstance(peer, str) else peer
        found = [j for j in (bench_json(results, n, gpu_only=True)
                             for n in peers) if j is not None]
        theirs = max(found, key=lambda j: j["images_per_sec"], default=None)
        if not rates or theirs is None:
            missing = [n for n in ours + peers
                       if bench_json(results, n, gpu_only=True) is None]
            yield f"goal {what}: NOT RUN (no result for {', '.join(missing)})"
            continue
        best_how, best = max(rates.items(), key=lambda kv: kv[1])
        ratio = best / theirs["images_per_sec"]
        ringlet = ", ".join(f"{r:,.0f} ({how})" for how, r in rates.items())
        yield (f"goal {what}: ringlet {ringlet} img/s, PyTorch "
               f"{theirs['images_per_sec']:,.0f}: {ratio:.2f}x with {best_how}: "
               f"{verdict(shown(ratio) >= least)}")


def memory_goals(results):
    def peak(name):
        j = bench_json(results, name, gpu_only=True)
        return None if j is None else j.get("gpu_peak_bytes")
    for what, ours, peers, most in MEMORY_GOALS:
        mine = peak(ours)
        theirs = {n: peak(n) for n in peers if peak(n) is not None}
        if mine is None or not theirs:
            missing = [n for n in [ours] + peers if peak(n) is None]
            yield (f"goal {what}: NOT RUN (no gpu_peak_bytes for "
                   f"{', '.join(missing)})")
            continue
        least_name, least = min(theirs.items(), key=lambda kv: kv[1])
        ratio = mine / least
        yield (f"goal {what}: ringlet {mine / 2**20:,.0f} MiB, PyTorch "
               f"{least / 2**20:,.0f} MiB ({least_name}): {ratio:.2f}x: "
               f"{verdict(shown(ratio) <= most)}")


def layout_lines(results):
    """ResNet-18's convolutions, NHWC against NCHW, per precision."""
    for precision in ("fp32", "tf32", "bf16"):
        ms = {}
        for layout in ("nchw", "nhwc"):
            j = bench_json(results, f"conv_layout_{precision}_{layout}")
            if j is not None and j.get("conv_ms") is not None:
                ms[layout] = j["conv_ms"]
        if len(ms) < 2:
            yield f"layout {precision}: not run"
            continue
        faster = "NHWC" if ms["nhwc"] < ms["nchw"] else "NCHW"
        yield (f"layout {precision}: ResNet-18's convolutions at batch 256, "
               f"NCHW {ms['nchw']:.2f} ms, NHWC {ms['nhwc']:.2f} ms "
               f"({ms['nhwc'] / ms['nchw']:.2f}x): {faster} is faster")


def step_layout_lines(results):
    """ResNet-18's whole training step, NHWC against NCHW (each layout's
    faster convolution API), per goal configuration: what --layout's
    default follows."""
    for config in STEP_LAYOUT_CONFIGS:
        best = {}
        for layout, suffix in (("nchw", ""), ("nhwc", "_nhwc")):
            rates = [j["images_per_sec"] for j in (
                bench_json(results, f"goal_{config}_{algorithms}{suffix}",
                           gpu_only=True)
                for algorithms in ("measure", "graph")) if j is not None]
            if rates:
                best[layout] = max(rates)
        if len(best) < 2:
            yield f"layout step {config}: not run"
            continue
        faster = "NHWC" if best["nhwc"] > best["nchw"] else "NCHW"
        yield (f"layout step {config}: NCHW {best['nchw']:,.0f} img/s, NHWC "
               f"{best['nhwc']:,.0f} ({best['nhwc'] / best['nchw']:.2f}x): "
               f"{faster} is faster")


def replica_goals(results):
    for what, name, most in REPLICA_GOALS:
        j = bench_json(results, name)
        if j is None:
            yield f"goal {what}: NOT RUN (no result for {name})"
            continue
        ratio = j["step_time_ratio"]
        yield f"goal {what}: {ratio:.3f}x: {verdict(round(ratio, 3) <= most)}"


def book_goals(results):
    for what, ours, peer, most, least_acc in BOOK_GOALS:
        mine = book_numbers(results.get(("e2e", ours)))
        book = book_numbers(results.get(("peer", peer)))
        if mine is None or book is None:
            missing = [n for n, v in ((ours, mine), (peer, book)) if v is None]
            yield f"goal {what}: NOT RUN (no closing line for {', '.join(missing)})"
            continue
        ratio = mine[1] / book[1]
        yield (f"goal {what}: ringlet {mine[1]} s at {mine[0]}, the book "
               f"{book[1]} s at {book[0]}: {ratio:.2f}x: "
               f"{verdict(shown(ratio) <= most and mine[0] >= least_acc)}")


def precision_goals(results):
    for what, ours, fp32, most, least_drop in PRECISION_GOALS:
        mine = book_numbers(results.get(("e2e", ours)))
        base = book_numbers(results.get(("e2e", fp32)))
        if mine is None or base is None:
            missing = [n for n, v in ((ours, mine), (fp32, base)) if v is None]
            yield f"goal {what}: NOT RUN (no closing line for {', '.join(missing)})"
            continue
        ok = mine[1] <= most and round(base[0] - mine[0], 2) <= least_drop
        yield (f"goal {what}: bf16 {mine[1]} s at {mine[0]}, fp32 {base[1]} s "
               f"at {base[0]}: {verdict(ok)}")


def recipe_goals(results):
    for what, name, least in RECIPE_GOALS:
        mine = book_numbers(results.get(("e2e", name)))
        if mine is None:
            yield f"goal {what}: NOT RUN (no closing line for {name})"
            continue
        yield (f"goal {what}: {mine[0]} ({mine[1]} s/epoch): "
               f"{verdict(mine[0] >= least)}")


def graph_lines(results):
    for config in GRAPH_CONFIGS:
        j = {(who, graph): bench_json(results, f"graphs_{config}_{who}_{graph}",
                                      gpu_only=True)
             for who in ("ringlet", "pytorch") for graph in ("false", "true")}
        if all(v is None for v in j.values()):
            continue
        parts = []
        for who in ("ringlet", "pytorch"):
            eager, graph = j[(who, "false")], j[(who, "true")]
            if eager is None:
                parts.append(f"{who}: not run")
                continue
            if graph is None:  # PyTorch's peer captures float32 only.
                parts.append(f"{who} {eager['images_per_sec']:,.0f} img/s "
                             "(no CUDA graph)")
                continue
            host = eager.get("host_ms_per_step")
            host_text = f", host {host:.2f} of {eager['step_ms']:.2f} ms" if host else ""
            parts.append(
                f"{who} {eager['images_per_sec']:,.0f} -> "
                f"{graph['images_per_sec']:,.0f} img/s "
                f"({graph['images_per_sec'] / eager['images_per_sec']:.2f}x"
                f"{host_text})")
        yield f"graphs {config}: " + "; ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="logs/results.txt of run_all.py")
    args = parser.parse_args()
    results = read_results(args.results)
    for section in (speed_goals, memory_goals, replica_goals, book_goals,
                    precision_goals, recipe_goals, graph_lines, layout_lines,
                    step_layout_lines):
        for line in section(results):
            print(line)


if __name__ == "__main__":
    main()
