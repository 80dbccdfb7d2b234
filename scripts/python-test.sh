#!/usr/bin/env bash
# The Python half's checks: lint, format, generated-code freshness, tests.
# Creates or refreshes .venv first (scripts/python-env.sh). Extra arguments
# go to pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/python-env.sh
VENV="$ROOT/.venv/bin"
"$VENV/ruff" check python bench
"$VENV/ruff" format --check python bench
PYTHON="$VENV/python" bash scripts/python-generate.sh --check
export JAX_PLATFORMS=cpu
export XLA_FLAGS="--xla_force_host_platform_device_count=1024"
# pytest exits 5 when it collects no tests; that counts as a failure too.
status=0
(cd python && "$VENV/python" -m pytest -q -p no:cacheprovider tests "$@") || status=$?
if [[ $status -eq 5 ]]; then echo "python-test: no tests were collected" >&2; fi
exit "$status"
