"""Each host's noise floor (its stock RMSE under changes that should not matter) -> results/noise_floor.csv."""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("noise_floor")
