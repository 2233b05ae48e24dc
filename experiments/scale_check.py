"""Every architecture at tabpfn's default size -> results/scale.csv (`make scale-check`)."""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("scale_check")
