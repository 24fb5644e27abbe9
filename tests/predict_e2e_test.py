"""--predict, --eval_only and the confusion record agree: resnet_dp trains
on scikit-learn's digits (numpy's arrays, 8x8 uint8 images, int64 ids);
the accuracy of the classes --predict writes for the test images is the
one --eval_only prints, and the diagonal of the metrics file's confusion
matrix over its total is the epoch's test accuracy. Inputs of another type
are refused.

  predict_e2e_test.py RESNET_DP
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from sklearn.datasets import load_digits


def run(args):
    result = subprocess.run(args, capture_output=True, text=True)
    return result.returncode, result.stdout, result.stderr


def main():
    binary = sys.argv[1]
    x, y = load_digits(return_X_y=True)
    x = (x.reshape(-1, 8, 8) * 16).clip(0, 255).astype("uint8")
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "digits.npz")
        np.savez(data, train_inputs=x[:1500], train_targets=y[:1500],
                 test_inputs=x[1500:], test_targets=y[1500:])
        params = os.path.join(d, "model.safetensors")
        metrics = os.path.join(d, "metrics.jsonl")
        common = ["--dataset=npy", "--data_dir=" + data, "--devices=cpu:1"]
        code, out, err = run([binary] + common + [
            "--epochs=2", "--batch_size=64", "--lr=0.05",
            "--params_out=" + params, "--metrics_out=" + metrics])
        assert code == 0, err
        print(out)
        lines = [json.loads(l) for l in open(metrics)]
        epochs = [l for l in lines if "epoch" in l and "loss" in l]
        confusion = lines[-1]["confusion"]
        m = np.array(confusion["matrix"])
        assert m.shape == (10, 10) and m.sum() == len(y) - 1500, m
        assert abs(np.trace(m) / m.sum() - epochs[-1]["test_acc"]) < 1e-12

        code, out, err = run([binary] + common +
                             ["--params_in=" + params, "--eval_only"])
        assert code == 0, err
        evaluated = float(re.search(r"test acc: ([0-9.]+)", out).group(1))

        inputs = os.path.join(d, "test_inputs.npy")
        np.save(inputs, x[1500:])
        predictions = os.path.join(d, "predictions.csv")
        code, out, err = run([binary] + common + [
            "--params_in=" + params, "--predict=" + inputs,
            "--predict_out=" + predictions])
        assert code == 0, err
        assert "predicted 297 samples" in err, err
        rows = list(csv.DictReader(open(predictions)))
        assert len(rows) == 297
        probs = np.array([[float(r["p_%d" % k]) for k in range(10)]
                          for r in rows])
        assert np.allclose(probs.sum(axis=1), 1, atol=1e-4)
        classes = np.array([int(r["class"]) for r in rows])
        assert (classes == probs.argmax(axis=1)).all()
        accuracy = float((classes == y[1500:]).mean())
        print("eval_only %.3f, predictions %.4f" % (evaluated, accuracy))
        assert abs(accuracy - evaluated) < 0.0005 + 1e-9, (accuracy, evaluated)

        floats = os.path.join(d, "floats.npy")
        np.save(floats, x[1500:].astype("float32"))
        code, out, err = run([binary] + common + [
            "--params_in=" + params, "--predict=" + floats])
        assert code == 1 and "the model was trained on uint8" in err, err
        code, out, err = run([binary] + common + ["--predict=" + inputs])
        assert code != 0 and "--predict needs --params_in" in err, err
    print("PASS")


if __name__ == "__main__":
    main()
