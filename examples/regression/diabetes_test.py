"""train_regression on a real table: scikit-learn's diabetes data (442
patients, 10 measurements, one target), a fixed 80/20 split. Its default
run must reach the test error of ordinary least squares on the same split
(within 5%), far below predicting the mean.

  diabetes_test.py BINARY
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression


def main():
    binary = sys.argv[1]
    x, y = load_diabetes(return_X_y=True, scaled=False)
    order = np.random.default_rng(0).permutation(len(y))
    test, train = order[:88], order[88:]
    with tempfile.TemporaryDirectory() as d:
        for split, rows in (("train", train), ("test", test)):
            np.save(os.path.join(d, split + "_inputs.npy"),
                    x[rows].astype("float32"))
            np.save(os.path.join(d, split + "_targets.npy"),
                    y[rows, None].astype("float32"))
        log = subprocess.run([binary, "--data_dir=" + d], check=True,
                             capture_output=True, text=True).stdout
    print(log.splitlines()[0])
    print(log.splitlines()[-1])
    linear = LinearRegression().fit(x[train], y[train])
    linear_mse = float(np.mean((linear.predict(x[test]) - y[test]) ** 2))
    mean_mse = float(np.mean((y[train].mean() - y[test]) ** 2))
    got = float(re.findall(r"test mse ([0-9.]+)$", log, re.M)[-1])
    said_mean = float(re.search(r"predicting the training mean: test mse "
                                r"([0-9.]+)", log).group(1))
    print(f"train_regression {got:.1f}, least squares {linear_mse:.1f}, "
          f"the mean {mean_mse:.1f}")
    assert abs(said_mean - mean_mse) < 1e-3 * mean_mse, (said_mean, mean_mse)
    assert got <= 1.05 * linear_mse, (got, linear_mse)
    print("PASS")


if __name__ == "__main__":
    main()
