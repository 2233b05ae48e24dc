"""Shapley values of a dataset's rows by removal in an o_closed host (`retrofit.jobs.explain`).

python experiments/explain.py dataset=csv dataset.path=data/houses.csv dataset.target=price 'rows=[0,5,9]'
"""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("explain")
