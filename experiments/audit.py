"""O-closure audit of the retrofitted hosts -> results/audit.csv (`make audit`).

python experiments/audit.py                                          # configs/audit.yaml: its `hosts`
python experiments/audit.py host=checkpoint host.path=/x/v3.ckpt host.name=v3_real   # one checkpoint
python experiments/audit.py 'random_hosts=[{arch: tabpfn_v3_5, seed: 0}]'
"""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("audit")
