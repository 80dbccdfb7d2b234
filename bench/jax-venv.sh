#!/usr/bin/env bash
# Prints the python of one supported JAX version's venv, the one scripts/jax-versions.sh
# tests with, and builds it first if it is missing or stale:
#
#   bench/jax-venv.sh 0.6.2    # ~/.cache/colocated-wire/jax-venvs/0.6.2/bin/python
#
# It runs that script's own venv_for (read out of the script, which has no flag to build a
# venv without running the tests), under the same variables, so the venv, its stamp and its
# reuse are exactly the script's. The bench still puts the working tree's python/ first on
# PYTHONPATH: a venv built from another checkout points its .pth there.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REQ="$ROOT/python/requirements.txt"
VENVS="${JAX_VENVS:-$HOME/.cache/colocated-wire/jax-venvs}"
PY="${PYTHON:-python3}"
export ROOT REQ VENVS PY

[[ $# -eq 1 ]] || { echo "usage: $0 VERSION" >&2; exit 2; }
script="$ROOT/scripts/jax-versions.sh"
# shellcheck source=/dev/null  # the function alone, from its line to its closing brace
source <(sed -n '/^venv_for() {$/,/^}$/p' "$script")
declare -F venv_for >/dev/null || { echo "jax-venv: no venv_for() in $script" >&2; exit 1; }
venv_for "$1"
