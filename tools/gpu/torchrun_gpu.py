"""Run in a GPU bundle (python3 torchrun_gpu.py): torchrun (PyTorch's own
launcher, 2.x on the GPU machine) starting lenet_scratch on the GPU:
a plain launch and a SIGKILLed worker under --max_restarts=1, each against
the one-process run's parameters."""
import os, re, shutil, signal, subprocess, sys, time
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
import run_all
os.chdir(here)
run_all.unpack_programs()
run_all.library_path(here)
os.environ["FASHION_MNIST_DIR"] = os.path.join(here, "fashion-mnist")
os.makedirs("logs", exist_ok=True)
cands = [shutil.which("torchrun"), "/opt/torch/.venv/bin/torchrun"]
torchrun = next((c for c in cands if c and os.path.exists(c)), None)
print("torchrun:", torchrun, flush=True)
run = ["trainers/lenet_scratch", "--reproducible", "--devices=cuda:0",
       "--seed=5", "--epochs=4", "--limit=12000", "--test_limit=500"]
rc = subprocess.run(run + ["--params_out=logs/straight.params"],
                    stdout=open("logs/tr_straight.log", "w"),
                    stderr=subprocess.STDOUT).returncode
straight = run_all.params_hash("logs/straight.params")
print("straight rc", rc, straight, flush=True)
base = [torchrun, "--rdzv_backend=c10d", "--rdzv_endpoint=localhost:0",
        "--nnodes=1", "--nproc_per_node=2", "--no_python"]
t = time.time()
rc = subprocess.run(base + run + ["--params_out=logs/tr2.params"],
                    stdout=open("logs/tr2.log", "w"),
                    stderr=subprocess.STDOUT, timeout=300).returncode
print("torchrun 2 procs rc", rc, run_all.params_hash("logs/tr2.params") if os.path.exists("logs/tr2.params") else "none",
      "%.1f s" % (time.time() - t), flush=True)
for l in open("logs/tr2.log").read().splitlines():
    if "error" in l or l.startswith("test acc") or "lenet_scratch on" in l: print("  " + l[:300], flush=True)
shutil.rmtree("logs/ck", ignore_errors=True)
log = open("logs/tr_restart.log", "w")
job = subprocess.Popen(base + ["--max_restarts=1"] + run + [
    "--params_out=logs/tr_restart.params", "--checkpoint_dir=logs/ck",
    "--checkpoint_steps=10", "--metrics_out=logs/tr_restart.jsonl"],
    stdout=log, stderr=subprocess.STDOUT)
start = time.time()
while time.time() - start < 120 and job.poll() is None:
    if re.search(r"^epoch 1/4: loss", open("logs/tr_restart.log").read(), re.M):
        break
    time.sleep(0.02)
pids = subprocess.run(["pgrep", "-f", "tr_restart.params"],
                      stdout=subprocess.PIPE, universal_newlines=True).stdout.split()
workers = [p for p in pids if "lenet_scratch" in open("/proc/%s/cmdline" % p).read().split("\0")[0]]
print("workers", workers, flush=True)
if workers:
    os.kill(int(workers[-1]), signal.SIGKILL)
    print("killed", workers[-1], "%.2f s after start" % (time.time() - start), flush=True)
rc = job.wait(timeout=300)
text = open("logs/tr_restart.log").read()
got = run_all.params_hash("logs/tr_restart.params") if os.path.exists("logs/tr_restart.params") else "none"
print("torchrun restart rc", rc, got, "straight", straight, "same" if got == straight else "DIFFERENT", flush=True)
for line in text.splitlines():
    if "restart" in line.lower() or line.startswith("test acc"):
        print("  " + line[:300])
