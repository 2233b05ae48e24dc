"""The stock host fed predict_many's padding vs o_closed -> results/padding_demo.csv."""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("padding_demo")
