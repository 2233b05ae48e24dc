#!/usr/bin/env bash
# Pretraining on a GPU node, one script, run from the repository root:
#   OUT=/some/folder MINUTES=6 bash gpu/pretrain.sh     # runs .venv/bin/python, which `make install` makes
#   PYTHON=python3 PYTHONPATH=$PWD/.site:$PWD OUT=/some/folder MINUTES=6 bash gpu/pretrain.sh   # a node without the venv
# (the interpreter: gpu/interpreter.sh).
# Trains, side by side on the one GPU, each run for MINUTES (default 6) of training, the CPU's
# cores split between them (the prior's tables are drawn on the CPU, so the stream of tables is the
# one a CPU run of the same config draws):
#   tiny_v2_b    configs/pretrain/tiny_v2.yaml with pretrain.seed=1: a second, independent tiny_v2
#   tiny_v3_b    configs/pretrain/tiny_v3.yaml with pretrain.seed=1: a second, independent tiny_v3
# RUNS="<name>=<pretrain config>:<seed> ..." replaces that list. Each run's resumable state stays in
# a scratch folder (it is ~30 MB and never comes back); into $OUT go, per run, <name>.safetensors
# (the exported host, under 16 MB: `make suite-candidate HOST=<host> WEIGHTS=<file>` scores it),
# <name>.log.jsonl (its held-out curve) and <name>.log, plus machine.txt and steps.csv (each run's
# wall seconds and exit status; 124: its time limit ended it).
# Exit status: 0 only if every run exported its host.
set -u
: "${OUT:?set OUT to the folder the results go to}"
export HF_HUB_OFFLINE=1 TABPFN_DISABLE_TELEMETRY=1 PYTHONUNBUFFERED=1
MINUTES=${MINUTES:-6}
DEVICE=${DEVICE:-cuda}   # DEVICE=cpu runs the same script where there is no GPU (its test does)
RUNS=${RUNS:-"tiny_v2_b=tiny_v2:1 tiny_v3_b=tiny_v3:1"}
cd "$(dirname "$0")/.."
. gpu/interpreter.sh
mkdir -p "$OUT"
SCRATCH=$(mktemp -d)
read -ra runs <<< "$RUNS"
threads=$(( $(nproc) / ${#runs[@]} )); [ "$threads" -ge 1 ] || threads=1
{ nvidia-smi -L; $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())'; } \
  > "$OUT/machine.txt" 2>&1
echo "run,wall_s,status" > "$OUT/steps.csv"

train() {  # train <name> <pretrain config> <seed>: one run under `timeout`, its files copied to $OUT
  local name=$1 config=$2 seed=$3 start status
  start=$(date +%s)
  timeout $(( MINUTES * 60 + 240 )) $PY experiments/pretrain_host.py "pretrain=$config" "pretrain.host_name=$name" \
    "pretrain.seed=$seed" "pretrain.device=$DEVICE" "pretrain.threads=$threads" "pretrain.max_minutes=$MINUTES" \
    "pretrain.run_dir=$SCRATCH/$name" pretrain.export_path=null "hydra.run.dir=$SCRATCH/$name/hydra" \
    > "$OUT/$name.log" 2>&1
  status=$?
  cp "$SCRATCH/$name/host.safetensors" "$OUT/$name.safetensors" 2>/dev/null || status=${status/#0/1}
  cp "$SCRATCH/$name/log.jsonl" "$OUT/$name.log.jsonl" 2>/dev/null
  echo "$name,$(( $(date +%s) - start )),$status" >> "$OUT/steps.csv"
  return "$status"
}

pids=()
for run in "${runs[@]}"; do
  name=${run%%=*}; spec=${run#*=}
  train "$name" "${spec%%:*}" "${spec#*:}" & pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
rm -rf "$SCRATCH"
cat "$OUT/steps.csv"
exit $failed
