# The interpreter the GPU scripts run, sourced by gpu/check.sh and gpu/pretrain.sh from the repository
# root: $PYTHON where it is set (a GPU node without the venv: PYTHON=python3, the pinned packages on
# PYTHONPATH), else the project's .venv/bin/python (`make install` makes it), the one every command of
# the README and docs/ names. Neither there: one line saying so, exit status 2.
PY=${PYTHON:-.venv/bin/python}
if ! command -v "$PY" > /dev/null 2>&1; then
  echo "error: no interpreter $PY (run \`make install\`, which makes .venv, or set PYTHON to a python holding the" \
    "pinned packages; a GPU node without the venv: PYTHON=python3 PYTHONPATH=\$PWD/.site:\$PWD)" >&2
  exit 2
fi
