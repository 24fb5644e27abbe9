#!/usr/bin/python3
"""Goodput under failures: a job of 2 processes under `torchrun
--max_restarts`, one worker SIGKILLed every --kill_every seconds (about M
failure-free steps), against the same job without failures. ringlet's
lenet_scratch (--checkpoint_steps, resumed on its own after each restart)
beside PyTorch DDP (trainers/bench/ddp_restart_torch.py: torch.save every
as many steps, loaded at start), same machine, same run:

  ./bazelw build //trainers:lenet_scratch
  /usr/bin/python3 trainers/bench/goodput.py [--steps=200 --kill_every_steps=50]

Each job trains --steps steps of batch 256 on 2 processes of one CPU device
(one thread each). The failure-free wall time T0 of each framework sets its
kill interval (kill_every_steps x T0 / steps seconds); goodput's cost is
the wall time with failures over T0 (goal: at most 1.1x). torchrun's own
detection is --monitor_interval (default 5 s; here 1 s for both). Prints a
Markdown table; every time is torchrun's whole job, start and data
loading included.
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def torchrun(restarts, monitor):
    # 1.13 on Python 3.11 fails at start unless --redirects and --tee name
    # one stream each. Not --standalone: its store's port is fixed (29400),
    # so a second job uses the first's and fails to restart once the first
    # has ended.
    return ["torchrun", "--rdzv_backend=c10d", "--rdzv_endpoint=localhost:0",
            "--nnodes=1", "--nproc_per_node=2",
            f"--max_restarts={restarts}", f"--monitor_interval={monitor}",
            "--redirects=2", "--tee=2"]


def commands(framework, args, work):
    ckpt = os.path.join(work, "ckpt")
    if framework == "ringlet":
        binary = os.path.join(args.bin_dir, "lenet_scratch")
        return ["--no_python", binary, "--devices=cpu:1",
                "--threads_per_device=1", "--epochs=1",
                f"--limit={256 * args.steps}", "--test_limit=64",
                f"--checkpoint_dir={ckpt}",
                f"--checkpoint_steps={args.checkpoint_every}"]
    script = os.path.join(ROOT, "trainers", "bench", "ddp_restart_torch.py")
    return [script, f"--steps={args.steps}", f"--ckpt={ckpt}",
            f"--checkpoint_every={args.checkpoint_every}"]


def workers(job):
    """The worker processes under torchrun's agent (its children)."""
    out = subprocess.run(["pgrep", "-P", str(job.pid)], capture_output=True,
                         text=True).stdout.split()
    return [int(p) for p in out]


def run(framework, args, kill_every):
    """Wall seconds and kills of one job; seconds is None when the kills
    outpaced torchrun's restarts (the job gave up: a result, not an error)."""
    work = tempfile.mkdtemp(prefix=f"goodput_{framework}_")
    try:
        cmd = torchrun(args.max_restarts if kill_every else 0, args.monitor) + \
            commands(framework, args, work)
        start = time.perf_counter()
        with open(os.path.join(work, "log"), "w") as log:
            job = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                   env=dict(os.environ, OMP_NUM_THREADS="1"))
            kills = 0
            next_kill = start + kill_every if kill_every else None
            while job.poll() is None:
                time.sleep(0.05)
                if next_kill and time.perf_counter() >= next_kill and \
                        (not args.max_kills or kills < args.max_kills):
                    pids = workers(job)
                    if pids:
                        os.kill(random.choice(pids), signal.SIGKILL)
                        kills += 1
                    next_kill += kill_every
        seconds = time.perf_counter() - start
        if job.returncode != 0 and kill_every and kills > args.max_restarts:
            return None, kills
        if job.returncode != 0:
            tail = open(os.path.join(work, "log")).read()[-2000:]
            raise SystemExit(f"{framework} failed ({job.returncode}):\n{tail}")
        return seconds, kills
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--bin_dir", default=os.path.join(ROOT, "bazel-bin", "trainers"))
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--kill_every_steps", type=int, default=50)
    parser.add_argument("--checkpoint_every", type=int, default=10)
    parser.add_argument("--max_restarts", type=int, default=20)
    parser.add_argument("--monitor", type=float, default=1.0,
                        help="torchrun's --monitor_interval, seconds")
    parser.add_argument("--max_kills", type=int, default=0,
                        help="stop killing after this many (0: no limit)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    random.seed(args.seed)
    print(f"{args.steps} steps of batch 256, 2 processes x 1 CPU device, "
          f"a checkpoint every {args.checkpoint_every} steps, a SIGKILL every "
          f"{args.kill_every_steps} failure-free steps' time\n")
    print("| framework | failure-free (s) | with kills (s) | kills | ratio |")
    print("|---|---|---|---|---|")
    for framework in ("ringlet", "pytorch"):
        clean, _ = run(framework, args, 0)
        every = args.kill_every_steps * clean / args.steps
        failed, kills = run(framework, args, every)
        name = "ringlet lenet_scratch" if framework == "ringlet" else \
            "PyTorch 1.13 DDP (gloo)"
        if failed is None:
            print(f"| {name} | {clean:.1f} | did not finish: kills every "
                  f"{every:.1f} s outpaced {args.max_restarts} restarts | "
                  f"{kills} | - |", flush=True)
        else:
            print(f"| {name} | {clean:.1f} | {failed:.1f} | {kills} | "
                  f"{failed / clean:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
