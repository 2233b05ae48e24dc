"""Removal explanations: closed removal vs a refit per coalition vs zeroing -> results/removal_{bench,stages}.*"""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("explain_bench")
