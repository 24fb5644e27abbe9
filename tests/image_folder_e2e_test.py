"""--dataset=image_folder trains on PNG files exactly as on the same pixels
in numpy's arrays: scikit-learn's digits written as train/ and test/
folders of class folders (8x8 gray PNGs, named so ImageFolder's order is
the arrays' order) and as an .npz; resnet_dp gives the same epoch lines on
both, names the classes by their folders in the confusion record,
predicts a folder of PNGs as it predicts the same pixels from an .npy, and
refuses images of two sizes naming the file.

  image_folder_e2e_test.py RESNET_DP
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from PIL import Image
from sklearn.datasets import load_digits

NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven",
         "eight", "nine"]


def write_split(root, x, y):
    """Writes the images; returns them in ImageFolder's order."""
    order = sorted(range(len(y)), key=lambda i: (NAMES[y[i]], i))
    for name in NAMES:
        os.makedirs(os.path.join(root, name), exist_ok=True)
    for i in order:
        Image.fromarray(x[i]).save(
            os.path.join(root, NAMES[y[i]], "%04d.png" % i))
    # ImageFolder's ids are the sorted folder names' places.
    ids = {name: k for k, name in enumerate(sorted(NAMES))}
    return x[order], np.array([ids[NAMES[y[i]]] for i in order])


def epoch_lines(text):
    return [re.sub(r", [0-9.]+ s, .*", "", l) for l in text.splitlines()
            if l.startswith("epoch ")]


def main():
    binary = sys.argv[1]
    x, y = load_digits(return_X_y=True)
    x = (x.reshape(-1, 8, 8) * 16).clip(0, 255).astype("uint8")
    with tempfile.TemporaryDirectory() as d:
        root = os.path.join(d, "digits")
        train_x, train_y = write_split(os.path.join(root, "train"),
                                       x[:1200], y[:1200])
        test_x, test_y = write_split(os.path.join(root, "test"),
                                     x[1200:], y[1200:])
        npz = os.path.join(d, "digits.npz")
        np.savez(npz, train_inputs=train_x, train_targets=train_y,
                 test_inputs=test_x, test_targets=test_y)
        common = ["--devices=cpu:1", "--epochs=2", "--batch_size=64",
                  "--lr=0.05"]
        metrics = os.path.join(d, "m.jsonl")
        params = os.path.join(d, "model.safetensors")
        folder = subprocess.run(
            [binary, "--dataset=image_folder", "--data_dir=" + root,
             "--metrics_out=" + metrics, "--params_out=" + params] + common,
            check=True, capture_output=True, text=True).stdout
        arrays = subprocess.run(
            [binary, "--dataset=npy", "--data_dir=" + npz] + common,
            check=True, capture_output=True, text=True).stdout
        print(folder)
        assert "1200 training and 597 test images (image_folder, uint8 " \
            "{1, 8, 8})" in folder, folder
        assert epoch_lines(folder) == epoch_lines(arrays), (folder, arrays)
        assert len(epoch_lines(folder)) == 2
        confusion = [json.loads(l) for l in open(metrics)][-1]["confusion"]
        assert confusion["classes"] == sorted(NAMES), confusion["classes"]

        # Predictions for a folder of images and for their pixels as .npy.
        ones = os.path.join(root, "test", "one")
        files = sorted(os.listdir(ones))
        np.save(os.path.join(d, "ones.npy"),
                np.stack([np.asarray(Image.open(os.path.join(ones, f)))
                          for f in files]))
        tables = []
        for source in (ones, os.path.join(d, "ones.npy")):
            out = subprocess.run(
                [binary, "--dataset=image_folder", "--data_dir=" + root,
                 "--params_in=" + params, "--predict=" + source],
                check=True, capture_output=True, text=True).stdout
            tables.append(list(csv.DictReader(out.splitlines())))
        assert [r["file"] for r in tables[0]] == \
            [os.path.join(ones, f) for f in files], tables[0][:2]
        for a, b in zip(*tables):
            assert a["class"] == b["class"] and a["p_one"] == b["p_one"]
        assert len(tables[1]) == len(files) > 0

        Image.fromarray(np.zeros((9, 8), np.uint8)).save(
            os.path.join(root, "test", "one", "odd.png"))
        bad = subprocess.run(
            [binary, "--dataset=image_folder", "--data_dir=" + root] + common,
            capture_output=True, text=True)
        assert bad.returncode == 1, bad
        assert "odd.png is 8x9 pixels" in bad.stderr, bad.stderr
    print("PASS")


if __name__ == "__main__":
    main()
