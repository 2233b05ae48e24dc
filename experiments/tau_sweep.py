"""ΔRMSE against the tau calibration constant c (make tau-sweep) -> results/tau_sweep.{csv,png}.

python experiments/tau_sweep.py                                  # configs/tau_sweep.yaml
python experiments/tau_sweep.py 'c_values=[0.001,0.01]' 'seeds=[0]' host=tiny_v2
python experiments/tau_sweep.py plot_only=true                   # redraw the plot from tau_sweep.csv

A progress bar per case over its units; per-unit detail in the run's log file.
"""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("tau_sweep")
