"""run_all.py's verdicts on recorded output, and its tests part end to end
on a bundle of fake test binaries (no GPU needed)."""
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "run_all.py")
spec = importlib.util.spec_from_file_location("run_all", SCRIPT)
run_all = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_all)


def report(cases):
    """A gtest JSON report of one suite; cases are (name, result, failed)."""
    return {"testsuites": [{"name": "Suite", "testsuite": [
        dict({"name": n, "classname": "Suite", "status": "RUN", "result": res},
             **({"failures": [{"failure": "boom"}]} if failed else {}))
        for n, res, failed in cases]}]}


class VerdictTest(unittest.TestCase):

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def summary(self, cases, log_text=""):
        path = os.path.join(self.dir, "r.json")
        log = os.path.join(self.dir, "r.log")
        with open(path, "w") as f:
            json.dump(report(cases), f)
        with open(log, "w") as f:
            f.write(log_text)
        return run_all.gtest_summary(path, log)

    def test_passed_counts_cases_and_skips(self):
        self.assertEqual(
            self.summary([("A", "COMPLETED", False), ("B", "COMPLETED", False),
                          ("C", "SKIPPED", False)]),
            ("PASSED", "PASSED (2 cases, 1 skipped)"))

    def test_all_skipped_gives_gtests_reason(self):
        verdict, text = self.summary(
            [("A", "SKIPPED", False), ("B", "SKIPPED", False)],
            "[ RUN      ] Suite.A\nx_test.cc:12: Skipped\n"
            "needs a GPU; the CUDA runtime reports 0\n")
        self.assertEqual(verdict, "SKIPPED")
        self.assertEqual(text,
                         "SKIPPED: needs a GPU; the CUDA runtime reports 0")

    def test_failures_are_named(self):
        verdict, text = self.summary(
            [("A", "COMPLETED", True), ("B", "COMPLETED", False)])
        self.assertEqual(verdict, "FAILED")
        self.assertEqual(text, "FAILED (1 of 2 cases: Suite.A)")

    def test_curves_within_the_bound_pass(self):
        ok, text = run_all.curve_verdict([2.3, 1.0], [2.3, 1.02], [2.3, 1.03],
                                         0.05)
        self.assertTrue(ok, text)
        self.assertIn("gpu off by 3.0%, bound 5.0%", text)

    def test_curves_beyond_the_bound_fail(self):
        ok, _ = run_all.curve_verdict([2.3, 1.0], [2.3, 1.0], [2.3, 1.2],
                                      0.05)
        self.assertFalse(ok)

    def test_threads_widen_the_bound(self):
        ok, text = run_all.curve_verdict([2.3, 1.0], [2.3, 1.1], [2.3, 1.15],
                                         0.05)
        self.assertTrue(ok, text)  # 2x the threads' 10% gap: 20%.

    def test_a_loss_that_never_fell_fails(self):
        ok, text = run_all.curve_verdict([2.3, 2.2], [2.3, 2.2], [2.3, 2.2],
                                         0.05)
        self.assertFalse(ok)
        self.assertIn("did not fall", text)


API_ERROR = """========= Program hit cudaErrorInvalidDevice (error 101) due to "invalid \
device ordinal" on CUDA API call to cudaSetDevice.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: ringlet::gpu::DeviceGuard::DeviceGuard(int)
"""
INVALID_READ = """========= Invalid __global__ read of size 4 bytes
=========     at AddKernel(const float *, float *, long)+0x70
=========     by thread (0,0,0) in block (3,0,0)
"""


class SanitizerVerdictTest(unittest.TestCase):
    """compute-sanitizer's reports, told apart (shapes of H100 logs)."""

    def verdict(self, rc, text, bundle="oneDNN: no"):
        return run_all.sanitizer_verdict(rc, text, bundle)

    def test_handled_api_errors_alone_are_clean(self):
        text = (API_ERROR * 2 + "[  PASSED  ] 5 tests.\n"
                "========= ERROR SUMMARY: 2 errors\n")
        verdict, detail = self.verdict(99, text)
        self.assertEqual(verdict, "PASSED")
        self.assertIn("cudaErrorInvalidDevice x2", detail)

    def test_a_memory_error_beside_api_errors_fails(self):
        text = (API_ERROR + INVALID_READ + "[  PASSED  ] 5 tests.\n"
                "========= ERROR SUMMARY: 2 errors\n")
        verdict, detail = self.verdict(99, text)
        self.assertEqual(verdict, "FAILED")
        self.assertIn("ERROR SUMMARY: 2 errors", detail)

    def test_failing_checks_under_the_sanitizer_are_named(self):
        text = ("[  FAILED  ] Models.LeNet (1321 ms)\n[  FAILED  ] 1 test\n"
                "========= ERROR SUMMARY: 0 errors\n")
        verdict, detail = self.verdict(1, text)
        self.assertEqual(verdict, "FAILED")
        self.assertIn("0 memory errors, but the program's own checks failed",
                      detail)
        self.assertIn("Models.LeNet", detail)

    def test_cudnn_logs_name_the_algorithms_run(self):
        log = ("I! CuDNN (v91900) function cudnnConvolutionForward() called:\n"
               "i!     algo: type=cudnnConvolutionFwdAlgo_t; "
               "val=CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING (5);\n"
               "i!     algo: type=cudnnConvolutionFwdAlgo_t; "
               "val=CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING (5);\n"
               "i!     algo: type=cudnnConvolutionBwdFilterAlgo_t; "
               "val=CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1 (1);\n")
        self.assertEqual(run_all.cudnn_algorithms_in(log),
                         ["BWD_FILTER_ALGO_1 x1", "FWD_ALGO_FFT_TILING x2"])

    def test_a_host_only_test_is_skipped(self):
        text = ("[  PASSED  ] 12 tests.\n========= Error: Target application "
                "terminated before first instrumented API call\n")
        self.assertEqual(self.verdict(255, text)[0], "SKIPPED")

    def test_a_program_dying_before_cuda_names_onednn(self):
        text = ("========= Error: Target application terminated before first "
                "instrumented API call\n")
        verdict, detail = self.verdict(255, text, "oneDNN: yes")
        self.assertEqual(verdict, "FAILED")
        self.assertIn("--without_onednn", detail)


FAKE_TEST = """#!/bin/sh
# A stand-in gtest binary: writes a JSON report where asked.
for arg in "$@"; do
  case "$arg" in --gtest_output=json:*) out="${arg#--gtest_output=json:}" ;; esac
done
cat > "$out" <<'JSON'
%s
JSON
%s
exit %d
"""


class BundleTest(unittest.TestCase):
    """run_all.py in a folder laid out as gpu_bundle.sh writes it."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        shutil.copy(SCRIPT, self.dir)

    def fake(self, path, cases, rc=0, output=""):
        full = os.path.join(self.dir, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(FAKE_TEST % (json.dumps(report(cases)), output, rc))
        os.chmod(full, os.stat(full).st_mode | stat.S_IXUSR)

    def run_bundle(self, *parts, env=None):
        out = subprocess.run(
            [sys.executable, os.path.join(self.dir, "run_all.py")] +
            list(parts), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            universal_newlines=True, cwd=self.dir, env=env)
        return out.returncode, out.stdout

    def script(self, path, body):
        full = os.path.join(self.dir, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(full, 0o755)

    def test_own_model_and_layouts_on_a_gpu(self):
        # A machine that looks like one with a GPU: nvidia-smi answers, the
        # data folder is there, and the programs print what theirs do.
        self.script("fakebin/nvidia-smi", "echo 'GPU 0: Fake GPU'\n")
        os.makedirs(os.path.join(self.dir, "fashion-mnist"))
        shutil.copy(os.path.join(HERE, "bench_goals.py"), self.dir)
        # The examples' epoch lines as they print them.
        self.script("examples/mlp/train_mlp",
                    "echo 'epoch 1: loss 0.5600, test acc 0.8300, 0.1 s, "
                    "comm 9.0% of it (8.9% exposed)'\n"
                    "echo 'epoch 2: loss 0.4100, test acc 0.8500, 0.1 s, "
                    "comm 9.1% of it (9.0% exposed)'\n")
        self.script("examples/tokens/train_tokens",
                    "echo 'epoch 1: loss 0.5100, test acc 0.8200, 12.0 s, "
                    "comm 1.7% of it (0.0% exposed)'\n"
                    "echo 'epoch 2: loss 0.3900, test acc 0.7900, 12.0 s, "
                    "comm 1.7% of it (0.0% exposed)'\n")
        layout = ('{"model": "resnet18", "batch_size": 256, "precision": '
                  '"bf16", "layout": "%s", "conv_ms": %s}')
        self.script("nn/bench/cuda_conv_layout_bench",
                    "echo '%s'\necho '%s'\n" % (layout % ("nchw", "8.0"),
                                                  layout % ("nhwc", "6.0")))
        env = dict(os.environ, PATH=os.path.join(self.dir, "fakebin") + ":" +
                   os.environ["PATH"], RINGLET_E2E_EPOCHS="1")
        _, out = self.run_bundle("goals", "e2e", env=env)
        self.assertIn("e2e train_mlp_2x_cuda0: PASSED: epoch 2: loss 0.4100, "
                      "test acc 0.8500", out)
        # Below the 0.80 the example reaches: a failure.
        self.assertIn("e2e train_tokens_2x_cuda0: FAILED (exit 0): epoch 2",
                      out)
        self.assertIn("layout bf16: ResNet-18's convolutions at batch 256, "
                      "NCHW 8.00 ms, NHWC 6.00 ms (0.75x): NHWC is faster",
                      out)
        # The trainers are not in this bundle: their e2e lines fail.
        self.assertIn("e2e resnet_dp_cuda0: FAILED", out)

    def test_tests_part_counts_each_binary(self):
        self.fake("nn/a_test", [("A", "COMPLETED", False)])
        self.fake("nn/b_test", [("B", "SKIPPED", False)],
                  output="echo 'b_test.cc:3: Skipped'; echo 'needs a GPU'")
        self.fake("gpu/c_test", [("C", "COMPLETED", True)], rc=1)
        with open(os.path.join(self.dir, "tests.txt"), "w") as f:
            f.write("nn/a_test\nnn/b_test\ngpu/c_test\n")
        rc, out = self.run_bundle("tests")
        self.assertEqual(rc, 1, out)
        self.assertIn("nn/a_test: PASSED (1 cases, 0 skipped)", out)
        self.assertIn("nn/b_test: SKIPPED: needs a GPU", out)
        self.assertIn("gpu/c_test: FAILED (1 of 1 cases: Suite.C), exit 1",
                      out)
        self.assertEqual(out.strip().splitlines()[-1],
                         "gpu: 1 passed, 1 failed, 1 skipped")

    def test_a_binary_that_dies_is_a_failure(self):
        path = os.path.join(self.dir, "nn", "dies_test")
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            f.write("#!/bin/sh\necho 'Segmentation fault'\nexit 139\n")
        os.chmod(path, 0o755)
        with open(os.path.join(self.dir, "tests.txt"), "w") as f:
            f.write("nn/dies_test\n")
        rc, out = self.run_bundle("tests")
        self.assertEqual(rc, 1, out)
        self.assertIn("nn/dies_test: FAILED (exit 139): Segmentation fault",
                      out)

    def test_a_crash_names_its_case_and_prints_its_frames(self):
        # What cli/crash_report.h prints before the process dies of it.
        path = os.path.join(self.dir, "collectives", "crash_test")
        os.makedirs(os.path.dirname(path))
        with open(path, "w") as f:
            f.write("#!/bin/sh\n"
                    "echo '[ RUN      ] Ring.Passes'\n"
                    "echo '[       OK ] Ring.Passes (1 ms)'\n"
                    "echo '[ RUN      ] Ring.Mismatch/0'\n"
                    "echo '*** fatal signal 11 (SIGSEGV) at address 0x8; "
                    "backtrace, `addr2line -f -C -e MODULE OFFSET` names "
                    "each line:'\n"
                    "echo '  #0 /b/_solib/libcrash.so+0x1a2b'\n"
                    "echo '  #1 /b/collectives/crash_test+0x3c4d (main)'\n"
                    "kill -SEGV $$\n")
        os.chmod(path, 0o755)
        with open(os.path.join(self.dir, "tests.txt"), "w") as f:
            f.write("collectives/crash_test\n")
        rc, out = self.run_bundle("tests")
        self.assertEqual(rc, 1, out)
        self.assertIn("collectives/crash_test: FAILED (exit -11): fatal "
                      "signal 11 (SIGSEGV) at address 0x8 in Ring.Mismatch/0",
                      out)
        self.assertIn("    #1 /b/collectives/crash_test+0x3c4d (main)", out)

    def test_an_unknown_part_is_a_usage_error(self):
        rc, out = self.run_bundle("tests", "benchmarks")
        self.assertEqual(rc, 2)
        self.assertIn("unknown part 'benchmarks'", out)


if __name__ == "__main__":
    unittest.main()
