"""Pretrain (or resume) a small TabPFN host: `python experiments/pretrain_host.py pretrain=tiny_v2`."""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("pretrain_host")
