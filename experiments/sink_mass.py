"""Sink mass of OAttention on the frozen hosts, per block and head -> results/sink_mass.csv.

python experiments/sink_mass.py                                   # configs/sink_mass.yaml
python experiments/sink_mass.py host=checkpoint host.path=/x/v3.ckpt host.name=v3_real
"""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("sink_mass")
