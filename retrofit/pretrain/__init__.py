"""Pretraining small TabPFN hosts on the synthetic prior (`retrofit.prior`), resumable."""
