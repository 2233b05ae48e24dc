"""Host quality bar -> `<results_dir>/host_quality.csv` (per case), `host_quality_summary.csv`,
`host_extrapolation.csv` (`benchmarks.host_quality.extrapolation_probe`) and a printed summary; with
`--config-name preset_selection`, the same on the preset-selection datasets (no model cards).
"""

from retrofit.jobs import launch

if __name__ == "__main__":
    launch("host_quality")
