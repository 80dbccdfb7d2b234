#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment at <repo>/.venv.
# Idempotent: reinstalls only when python/requirements.txt (or this script)
# changed since the last successful install; a hash stamp lives in .venv.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
REQ="$ROOT/python/requirements.txt"
STAMP="$VENV/.colocated-wire-requirements.sha256"
PY="${PYTHON:-python3}"

want="$(cat "$REQ" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
  exit 0
fi
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "python-env: creating $VENV" >&2
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --retries 2 --timeout 30 --disable-pip-version-check -q)
echo "python-env: installing python/requirements.txt" >&2
"${PIP[@]}" install -r "$REQ"
# Put python/ on the venv's path with a .pth file: the package and its
# generated code are importable without a build step, and new modules are
# picked up without reinstalling.
SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$ROOT/python" > "$SITE/colocated-wire.pth"
echo "$want" > "$STAMP"
