#!/usr/bin/env bash
# The GPU check, one script for a GPU node, run from the repository root:
#   OUT=/some/folder bash gpu/check.sh     # runs .venv/bin/python, which `make install` makes
#   PYTHON=python3 PYTHONPATH=$PWD/.site:$PWD OUT=/some/folder bash gpu/check.sh   # a node without the venv
# (the interpreter: gpu/interpreter.sh).
# Steps, each under its own time limit (they add up to 7.5 minutes; a failed step does not stop the next):
#   cuda_tests   the tests marked cuda;
#   gpu_record   the main job's grid on CUDA, checked unit by unit against the CPU record
#                (benchmarks.gpu_record --no-scale);
#   scale_check  the scale check on CUDA for the architectures o_closed runs on (tabpfn_v3, tabpfn_v3_5):
#                time, memory and operations at the three `cuda_sizes`, 7 interleaved rounds.
# Writes into $OUT three files, so that a machine that hands back only a few files returns it all:
#   machine.txt, steps.csv (each step's wall seconds and exit status; 124: its time limit ended it) and
#   gpu_check.tar.gz: every step's log and the record's files (gpu/: the grid's table, cpu_agreement.csv,
#   command_times.csv, scale.csv).
# Exit status: 0 only if every step passed.
set -u
: "${OUT:?set OUT to the folder the results go to}"
export HF_HUB_OFFLINE=1 TABPFN_DISABLE_TELEMETRY=1 PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
. gpu/interpreter.sh
mkdir -p "$OUT/gpu_check"
LOGS="$OUT/gpu_check"
echo "step,wall_s,status" > "$OUT/steps.csv"
failed=0

step() {  # step <name> <seconds> <command...>: run it under `timeout`, log to $LOGS/<name>.log
  local name=$1 limit=$2 start status
  shift 2
  start=$(date +%s%N)
  timeout "$limit" "$@" > "$LOGS/$name.log" 2>&1
  status=$?
  local ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf '%s,%d.%03d,%s\n' "$name" $((ms / 1000)) $((ms % 1000)) "$status" >> "$OUT/steps.csv"
  echo "$name: exit $status ($(tail -n 1 "$LOGS/$name.log"))"
  [ "$status" -eq 0 ] || failed=1
}

{ nvidia-smi -L; $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'; } \
  > "$OUT/machine.txt" 2>&1
step cuda_tests 60 $PY -m pytest -q -p no:cacheprovider -m cuda tests/
step gpu_record 170 $PY -m benchmarks.gpu_record --out "$LOGS/gpu" --jobs 8 --no-scale
step scale_check 220 $PY experiments/scale_check.py device=cuda 'archs=[tabpfn_v3,tabpfn_v3_5]' rounds=7 \
  output="$LOGS/gpu/scale.csv"
cp "$OUT/steps.csv" "$OUT/machine.txt" "$LOGS/"
tar -czf "$OUT/gpu_check.tar.gz" -C "$OUT" gpu_check && rm -rf "$LOGS"
cat "$OUT/steps.csv"
exit $failed
