"""Removal explanations at tabpfn's default size -> results/removal_scale.csv (`make explain-scale`)."""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("explain_scale")
