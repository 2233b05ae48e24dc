"""Two-block hosts under null insertion -> results/ablation.{csv,md} (`make ablation`)."""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("ablation")
