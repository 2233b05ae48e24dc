#!/usr/bin/env bash
# The GPU check, one script for a GPU node (no venv: python3 with the pinned packages on PYTHONPATH):
#   export PYTHONPATH=$PWD/.site:$PWD HF_HUB_OFFLINE=1; OUT=/some/folder bash gpu/check.sh
# Writes into $OUT: machine.txt, cuda_tests.log (the tests marked cuda), gpu/ (the GPU record:
# benchmarks.gpu_record's grid, cpu_agreement.csv and command_times.csv; then scale.csv of the scale
# check on CUDA), <step>.log and steps.csv (each step's wall seconds and exit status; 124: its time
# limit ended it). The limits add up to 7.5 minutes; a failed step does not stop the next.
# Exit status: 0 only if every step passed.
set -u
: "${OUT:?set OUT to the folder the results go to}"
export HF_HUB_OFFLINE=1 TABPFN_DISABLE_TELEMETRY=1
PY=${PYTHON:-python3}
cd "$(dirname "$0")/.."
mkdir -p "$OUT"
echo "step,wall_s,status" > "$OUT/steps.csv"
failed=0

step() {  # step <name> <seconds> <command...>: run it under `timeout`, log to $OUT/<name>.log
  local name=$1 limit=$2 start status
  shift 2
  start=$(date +%s%N)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  status=$?
  local ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf '%s,%d.%03d,%s\n' "$name" $((ms / 1000)) $((ms % 1000)) "$status" >> "$OUT/steps.csv"
  echo "$name: exit $status ($(tail -n 1 "$OUT/$name.log"))"
  [ "$status" -eq 0 ] || failed=1
}

{ nvidia-smi -L; $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'; } \
  > "$OUT/machine.txt" 2>&1
step cuda_tests 90 $PY -m pytest -q -p no:cacheprovider -m cuda tests/
step gpu_record 300 $PY -m benchmarks.gpu_record --out "$OUT/gpu" --jobs 8 --no-scale
step scale_check 60 $PY experiments/scale_check.py device=cuda output="$OUT/gpu/scale.csv"
cat "$OUT/steps.csv"
exit $failed
