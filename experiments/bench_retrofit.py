"""Patched / baseline predict time per variant on a host (prints ratios; a benchmark, not a test).

Run: .venv/bin/python experiments/bench_retrofit.py [host] [n_train] [repeats]
"""

import sys
import time

import numpy as np
import torch
from sklearn.datasets import make_regression

from retrofit.hosts import get_path, make_regressor
from retrofit.patching import retrofit


def main(host: str = "tiny_v3", n_train: int = 1000, repeats: int = 5) -> None:
    torch.set_num_threads(1)
    X, y = make_regression(n_samples=n_train + 200, n_features=8, noise=1.0, random_state=0)
    regressor = make_regressor(get_path(host), n_estimators=2, random_state=0)
    regressor.fit(X[:n_train], y[:n_train])
    clones = {name: retrofit(regressor, name) for name in ("baseline", "oa_only", "full_o")}
    seconds = {name: [] for name in clones}
    for _ in range(repeats):  # interleaved, so drifting machine load hits every variant alike
        for name, clone in clones.items():
            start = time.perf_counter()
            clone.predict(X[n_train:])
            seconds[name].append(time.perf_counter() - start)
    base = np.median(seconds["baseline"])
    for name, times in seconds.items():
        print(f"{host} n_train={n_train} {name:9s} median {np.median(times):.3f}s  ratio {np.median(times) / base:.3f}")


if __name__ == "__main__":
    main(*(cast(arg) for cast, arg in zip((str, int, int), sys.argv[1:])))
