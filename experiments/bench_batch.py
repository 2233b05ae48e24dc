"""predict_many vs sequential predict on the benchmark's 18 cases -> results/bench_batch.csv."""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("bench_batch")
