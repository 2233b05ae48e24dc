# oclosure-retrofit — every target installs the pinned venv on first use.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Targets leave git as they found it, except the record targets, which exist to rewrite the committed
# results/, and `make docs`, which rewrites the docs' generated tables from them. A record target runs
# under RECORD: RETROFIT_RECORD=1 is the only way anything may write
# results/ (retrofit.record_guard), and its wall and CPU time go to results/command_times.csv on success
# (`make tables`, whose renders change nothing when the CSVs did not, times into outputs/ instead: tables-time records it).
# `$(call RECORD_AS,<row>)` records under another row name (quick-time records `quick`).
# Every other target runs under TIMED: its time goes to the untracked outputs/command_times.csv
# (retrofit.runtimes). Pretraining runs for its configured max_minutes per call, so it is not timed.
TIMED = $(PY) -m retrofit.runtimes record $@ --to outputs/command_times.csv --
RECORD_AS = RETROFIT_RECORD=1 $(PY) -m retrofit.runtimes record $(1) --to results/command_times.csv --
RECORD = $(call RECORD_AS,$@)
# Offline by contract: nothing here may reach a model hub.
export HF_HUB_OFFLINE := 1
export TABPFN_DISABLE_TELEMETRY := 1

.DEFAULT_GOAL := help
.PHONY: help install quick quick-time retrofit suite suite-candidate diff compare sink-mass sweep-submitit test test-fast lint exactness ablation bench audit padding-demo bench-batch explain-bench explain-scale tau-sweep host-quality preset-selection noise-floor tables tables-time gpu-record pretrain-v2 pretrain-v3 pretrain-v3_5 scale-check sweep-cost docs clean

help: ## list targets
	@grep -E '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

# The pinned set (constraints.txt) is installed by uv (pinned there too): in parallel, bytecode included,
# about 40 s where pip takes 2.5 min. uv reads no pip configuration, so pip's find-links and indexes
# (where a machine keeps its local torch wheel) are handed to it: PIP_<NAME> first, then pip's config,
# searched as pip searches them (every index for the best match of each pin).
UV := $(shell grep "^uv==" constraints.txt)
$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; set PYTHON=/path/to/python3.11" >&2; exit 1; }
	@start=$$(date +%s.%N); set -e; \
	$(PYTHON) -m venv $(VENV); \
	$(PY) -m pip install -q $(UV); \
	pip_setting() { printenv "PIP_$$1" || $(PY) -m pip config get "global.$$2" 2>/dev/null || true; }; \
	links=$$(pip_setting FIND_LINKS find-links | tr -s ' \n' ',' | sed 's/,$$//'); \
	extra=$$(pip_setting EXTRA_INDEX_URL extra-index-url | tr -s '\n' ' '); \
	index=$$(pip_setting INDEX_URL index-url); \
	[ -z "$$links" ] || export UV_FIND_LINKS="$$links"; \
	[ -z "$$extra" ] || export UV_INDEX="$$extra"; \
	[ -z "$$index" ] || export UV_DEFAULT_INDEX="$$index"; \
	$(VENV)/bin/uv pip install -q --python $(PY) --index-strategy unsafe-best-match --compile-bytecode \
		-c constraints.txt -e ".[dev]"; \
	$(PY) -m retrofit.runtimes add install --to outputs/command_times.csv --since $$start
	touch $(STAMP)

install: $(STAMP) ## create .venv and install the pinned harness (first use only)

# The quick start's command: `quick` times it into outputs/; `quick-time` runs it under RECORD with the row
# named `quick`, so the time the README links is in results/command_times.csv (it writes only outputs/quick/).
QUICK = $(PY) experiments/sweep.py dataset=diabetes host=tiny_v3 n_estimators=4 timing.rounds=0 results_dir=outputs/quick

quick: $(STAMP) ## one matched case in seconds: tiny_v3 on diabetes, the stock host and every variant on one fit -> outputs/quick/
	$(TIMED) $(QUICK)

quick-time: $(STAMP) ## make quick, its wall and CPU time recorded in results/command_times.csv under `quick`
	$(call RECORD_AS,quick) $(QUICK)

# The only command that rewrites the sweep's files in the committed results/ (RECORD, retrofit.record_guard). The sweep
# reads the reference before it runs (as committed at HEAD; outside git, as the file is then), writes
# results/reproduction.txt and fails unless every row reproduces it (retrofit.results.reproduction); its tables
# and plots show the hosts' noise floors (results/noise_floor.csv).
# GRID_CHANGED=1 (grid_changed=true) records a grid changed on purpose: the rows both grids hold must
# reproduce, new and dropped rows are listed in results/reproduction.txt.
retrofit: $(STAMP) ## the main job: hosts x datasets x seeds x variants -> results/retrofit_rmse.csv, table, reproduction check
	$(RECORD) sh -c '$(PY) experiments/sweep.py -m +experiment=paper_table hydra/launcher=joblib \
		hydra.launcher.n_jobs=2 results_dir=results reference=results/retrofit_rmse.csv \
		reference_commit=HEAD$(if $(value GRID_CHANGED), grid_changed=true) && $(PY) experiments/sink_mass.py'

# The tables and plots of the record's two sweeps (results/, results/suite/) re-rendered from their committed CSVs
# (retrofit_rmse.csv, decomposition.csv, noise_floor.csv), nothing rerun: seconds. It writes results/ (RETROFIT_RECORD=1)
# and those renders alone: its time goes to the untracked outputs/ (TIMED), so a re-render that changes nothing leaves
# git clean. `tables-time` runs it with its time recorded in results/command_times.csv under `tables`, as quick-time does.
TABLES = sh -c '$(PY) experiments/tables.py && $(PY) experiments/tables.py results_dir=results/suite'

tables: $(STAMP) ## re-render the record's tables (.md, .tex) and plots from its committed CSVs, nothing rerun -> results/, results/suite/
	RETROFIT_RECORD=1 $(TIMED) $(TABLES)

tables-time: $(STAMP) ## make tables, its wall and CPU time recorded in results/command_times.csv under `tables`
	$(call RECORD_AS,tables) $(TABLES)

# The suite (docs/suite.md): its sweep (+experiment=suite: every shipped host × 36 real tables × 2 seeds, every
# variant) into results/suite/, checked against the suite's committed retrofit_rmse.csv as `make retrofit` is, then
# experiments/suite.py there: the baselines on the same splits, ratios, wins, ranks, deltas per half, the plot.
suite: $(STAMP) ## the suite: hosts vs ridge / random forest / gradient boosting on 36 real tables, both halves -> results/suite/
	$(RECORD) sh -c '$(PY) experiments/sweep.py -m +experiment=suite hydra/launcher=joblib hydra.launcher.n_jobs=2 \
		hydra.launcher.verbose=10 results_dir=results/suite reference=results/suite/retrofit_rmse.csv \
		reference_commit=HEAD$(if $(value GRID_CHANGED), grid_changed=true) && $(PY) experiments/suite.py'

# A candidate host, scored where tuning may look: the suite's development half only. WEIGHTS is a host file of HOST's
# architecture (a pretraining run exports pretrain_runs/<host>/host.safetensors); its sweep (baseline + oa_only) and
# experiments/suite.py with held_out=[] go to outputs/suite_candidate/<HOST>/, never to the record. HOST and WEIGHTS
# are data, as A and B below: kept unexpanded, exported, and the path reaches Hydra through ${oc.env:...}, unparsed.
override HOST := $(value HOST)
override WEIGHTS := $(value WEIGHTS)
suite-candidate: export HOST := $(HOST)
suite-candidate: export RETROFIT_CANDIDATE := $(WEIGHTS)
suite-candidate: $(STAMP) ## candidate weights on the suite's development half (HOST=tiny_v3 WEIGHTS=<file>) -> outputs/suite_candidate/
	@case "$$HOST" in tiny_v2|tiny_v3|tiny_v3_5) ;; *) echo "usage: make suite-candidate HOST=tiny_v2|tiny_v3|tiny_v3_5 WEIGHTS=<host file>" >&2; exit 2;; esac
	@test -f "$$RETROFIT_CANDIDATE" || { echo "error: WEIGHTS='$$RETROFIT_CANDIDATE' is not a file: give a host file (pretraining exports pretrain_runs/<host>/host.safetensors)" >&2; exit 2; }
	$(TIMED) sh -c '$(PY) experiments/sweep.py -m +experiment=suite hydra/launcher=joblib hydra.launcher.n_jobs=2 \
		hydra.sweeper.params.host=$$HOST "host.path=\$${oc.env:RETROFIT_CANDIDATE}" "hydra.sweeper.params.dataset=\$${suite_development}" \
		variant=oa_only results_dir=outputs/suite_candidate/$$HOST && \
		$(PY) experiments/suite.py output_dir=outputs/suite_candidate/$$HOST "held_out=[]"'

# A and B are file names, handed over as data: kept unexpanded (`$(value ...)`, so a `$(shell ...)` in them is
# text) and exported, so the recipe reads them from the environment ("$$A") and no shell parses their text.
override A := $(value A)
override B := $(value B)
diff compare: export A := $(A)
diff compare: export B := $(B)
diff: $(STAMP) ## two retrofit_rmse.csv unit by unit: largest difference per column, mean ΔRMSE per variant (A=<csv> B=<csv>)
compare: $(STAMP) ## the former name of diff: runs it, after a line giving the new name (A=<csv> B=<csv>)
diff compare:
	@test -n "$$A" -a -n "$$B" || { echo "usage: make $@ A=<csv> B=<csv>" >&2; exit 2; }
	$(TIMED) $(PY) experiments/$@.py "$$A" "$$B"

sink-mass: $(STAMP) ## sink share of absolute OAttention per block and head (every shipped host) -> results/sink_mass.csv
	$(RECORD) $(PY) experiments/sink_mass.py

sweep-cost: $(STAMP) ## where the sweep's time goes: CPU seconds per phase of its cases, shared stages on / off -> results/sweep_cost.csv
	$(RECORD) $(PY) experiments/sweep_cost.py

sweep-submitit: $(STAMP) ## a small sweep through the submitit launcher (local mode; SLURM: hydra/launcher=slurm)
	$(TIMED) $(PY) experiments/sweep.py -m dataset=diabetes,hitters variant=oa_only hydra/launcher=submitit_local \
		results_dir=outputs/sweep_submitit cache_dir=outputs/sweep_submitit/.cache

# The suite runs in TEST_WORKERS pytest-xdist processes (2: CI's cores), each with its share of the
# CPU threads (tests/conftest.py); TEST_WORKERS=0 runs it in this process alone. Each worker starts on
# a contiguous share of the tests (so most modules build their fixtures in one worker only), and an
# idle one takes over the last tests of a busy one (`--dist worksteal`).
TEST_WORKERS ?= 2
test: $(STAMP) ## the whole test suite (what CI runs)
	$(TIMED) $(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=20

lint: $(STAMP) ## ruff (lint, formatting) and the import layers (import-linter): what CI runs
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

test-fast: $(STAMP) ## unit tests only (skips the slow real-host and sweep tests)
	$(TIMED) $(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m "not slow"

exactness: $(STAMP) ## OAttention accuracy vs the float64 reference -> results/exactness.csv
	$(RECORD) $(PY) experiments/exactness.py

ablation: $(STAMP) ## standard vs OA-only vs OTransformer null insertion -> results/ablation.{csv,md}
	$(RECORD) $(PY) experiments/ablation.py

bench: $(STAMP) ## OAttention vs plain SDPA vs naive: time ratios and peak memory (prints)
	$(TIMED) $(PY) experiments/bench_attention.py

audit: $(STAMP) ## O-closure audit (null rows/columns at the input and at the in-context entry) -> results/audit.csv
	$(RECORD) $(PY) experiments/audit.py

padding-demo: $(STAMP) ## the stock host fed predict_many's padding vs o_closed -> results/padding_demo.csv
	$(RECORD) $(PY) experiments/padding_demo.py

bench-batch: $(STAMP) ## predict_many vs one predict after another, 18 cases, interleaved -> results/bench_batch.csv
	$(RECORD) $(PY) experiments/bench_batch.py

explain-bench: $(STAMP) ## Removal explanations (SV, k-SII, leave-one-out): batched closed removal vs a refit per coalition vs zeroing -> results/removal_bench.{csv,png}, removal_stages.csv
	$(RECORD) $(PY) experiments/explain_bench.py

explain-scale: $(STAMP) ## removal explanations on tabpfn_v3 and v3.5 at default size: ours vs an o_closed refit per coalition / row -> results/removal_scale.csv
	$(RECORD) $(PY) experiments/explain_scale.py

tau-sweep: $(STAMP) ## delta RMSE vs tau calibration constant c -> results/tau_sweep.{csv,png}
	$(RECORD) $(PY) experiments/tau_sweep.py

host-quality: $(STAMP) ## shipped hosts vs ridge / RF / mean -> results/host_quality.csv
	$(RECORD) $(PY) experiments/host_quality.py

preset-selection: $(STAMP) ## hosts' inference presets on datasets disjoint from the bar -> results/preset_selection/
	$(RECORD) $(PY) experiments/host_quality.py --config-name preset_selection

noise-floor: $(STAMP) ## each host's stock RMSE under inputs x (1 +- 1e-7), 1 vs 2 threads, chunked predict, tabpfn's precision, CPU vs CUDA, redrawn embeddings -> results/noise_floor.csv
	$(RECORD) $(PY) experiments/noise_floor.py output=results/noise_floor.csv

# The GPU record (benchmarks.gpu_record; without make: python -m benchmarks.gpu_record --out <folder>):
# refused in one line where torch sees no CUDA device.
gpu-record: $(STAMP) ## the main grid and the scale check on CUDA -> results/gpu/, every unit checked against the CPU record (needs CUDA)
	$(RECORD) $(PY) -m benchmarks.gpu_record --out results/gpu

scale-check: $(STAMP) ## every architecture at tabpfn's default size: retrofit time / memory ratios, audit, predict_many -> results/scale.csv
	$(RECORD) $(PY) experiments/scale_check.py

pretrain-v2: $(STAMP) ## pretrain (or resume) the tiny_v2 host
	$(PY) experiments/pretrain_host.py pretrain=tiny_v2

pretrain-v3: $(STAMP) ## pretrain (or resume) the tiny_v3 host
	$(PY) experiments/pretrain_host.py pretrain=tiny_v3

pretrain-v3_5: $(STAMP) ## pretrain (or resume) the tiny_v3_5 host
	$(PY) experiments/pretrain_host.py pretrain=tiny_v3_5

# The measured figures of README.md and docs/*.md live in their generated regions only (`<!-- generated: <name> -->`),
# rendered from the committed results/ by retrofit.results.generated_docs; run it after a record target rewrites results/.
docs: $(STAMP) ## rewrite the generated tables of README.md and docs/*.md from the committed results/
	$(TIMED) $(PY) -m retrofit.results.generated_docs

clean: ## remove the venv and caches (keeps results/)
	rm -rf $(VENV) .pytest_cache .hypothesis .import_linter_cache outputs multirun .cache
