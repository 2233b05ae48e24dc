"""The retrofit sweep (`retrofit.jobs.sweep`): one case per job; `make retrofit` runs the paper table.

python experiments/sweep.py dataset=diabetes variant=oa_only results_dir=outputs/quick
python experiments/sweep.py -m +experiment=paper_table
"""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("sweep")
