"""Benchmark: OAttention vs plain SDPA vs naive, one thread; prints ratios (`make bench`)."""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("bench")
