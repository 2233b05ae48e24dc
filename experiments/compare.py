"""Compare two retrofit_rmse.csv files unit by unit (make compare A=<csv> B=<csv>).

    python experiments/compare.py outputs/results/retrofit_rmse.csv results/retrofit_rmse.csv

Prints, per numeric column, the largest |A − B| over the matched units and where, and per host ×
variant the mean ΔRMSE % in A and in B (`retrofit.results.compare`).
"""

import argparse

from retrofit.errors import exit_on_user_error, printable_output
from retrofit.results.compare import compare


def main() -> None:
    printable_output()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="a retrofit_rmse.csv (A)")
    parser.add_argument("b", help="another retrofit_rmse.csv (B), e.g. the committed results/retrofit_rmse.csv")
    args = parser.parse_args()
    with exit_on_user_error():
        print(f"A = {args.a}\nB = {args.b}\n")
        print(compare(args.a, args.b).text())


if __name__ == "__main__":
    main()
