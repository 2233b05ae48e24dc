"""Where the sweep's time goes: CPU seconds per phase of the paper table's cases -> results/sweep_cost.csv.

python experiments/sweep_cost.py                      # configs/sweep_cost.yaml (make sweep-cost)
python experiments/sweep_cost.py 'datasets=[wage]' 'seeds=[1]' repeats=1 output=outputs/cost.csv
"""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("sweep_cost")
