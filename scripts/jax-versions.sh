#!/usr/bin/env bash
# Run the conformance vectors, the specs, program and value tests, the plugin's tests and
# the worker's test file on every supported JAX version (jax_support.SUPPORTED_JAX), one
# venv per version.
#
#   scripts/jax-versions.sh            # every version in VERSIONS
#   scripts/jax-versions.sh 0.6.2      # only these (each must be in VERSIONS)
#   scripts/jax-versions.sh --matrix-only   # only the cross-version matrix (below)
#   scripts/jax-versions.sh --venv-only 0.6.2   # only build or reuse the venvs: each python
#                                               # on stdout, one a line (bench/codec/plugin-versions.ts)
#
# After the tests, the cross-version matrix (python/tests/cross_version.py): every
# selected version writes its payloads, then every one reads all of them (lifts,
# compares with its own objects, re-encodes) and JAX's own pickles of the same objects.
# The two writer-by-reader matrices are printed and written as markdown to
# ${JAX_MATRIX_MD:-out/jax-matrix.md}; a colocated_wire cell that is not "ok" fails the
# run, JAX's own pickles failing across versions is only reported. --no-matrix skips it.
#
# Venvs live under ${JAX_VENVS:-$HOME/.cache/colocated-wire/jax-venvs}/<version>
# and are reused while their stamp (a hash of the pinned requirements and this
# script's venv_for) matches, as scripts/python-env.sh does for .venv. Each gets jax and
# jaxlib of its version plus every other pin of python/requirements.txt, and
# python/ on its path. Prints one line per version (--venv-only: its python, and
# failures on stderr); exits non-zero if any fails.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REQ="$ROOT/python/requirements.txt"
VENVS="${JAX_VENVS:-$HOME/.cache/colocated-wire/jax-venvs}"
PY="${PYTHON:-python3}"

# The supported versions: 0.4.38 (the oldest, the last 0.4), then one exact release of each
# minor (0.10 is .venv's, from requirements.txt).
VERSIONS=(0.4.38 0.5.3 0.6.2 0.7.2 0.8.3 0.9.2 0.10.2)

TESTS=(
  tests/test_vectors.py tests/test_specs.py tests/test_program.py tests/test_values.py
  tests/test_plugin.py tests/test_plugin_pytrees.py tests/test_plugin_values.py
  tests/test_plugin_behaviours.py tests/test_plugin_errors.py tests/test_worker.py
)

# Installs (or reuses) the venv of one version; prints its python. Its text is part of the
# venvs' stamp: changing it rebuilds every venv.
venv_for() {
  local version=$1 venv="$VENVS/$1"
  local stamp="$venv/.colocated-wire-requirements.sha256"
  local others
  others="$(grep -Ev '^\s*(#|$)|^jax(lib)?==' "$REQ")"
  local want
  want="$(printf 'jax==%s\njaxlib==%s\n%s\n' "$version" "$version" "$others" |
    cat - <(declare -f venv_for) | sha256sum | cut -d' ' -f1)"
  if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "$venv/bin/python"
    return 0
  fi
  mkdir -p "$VENVS"
  [[ -x "$venv/bin/python" ]] || "$PY" -m venv "$venv" >&2 || return 1
  echo "jax-versions: installing jax $version into $venv" >&2
  # shellcheck disable=SC2086  # one argument per pin
  "$venv/bin/python" -m pip --retries 2 --timeout 60 --disable-pip-version-check -q install \
    "jax==$version" "jaxlib==$version" $others >&2 || return 1
  local site
  site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "$ROOT/python" >"$site/colocated-wire.pth"
  echo "$want" >"$stamp"
  echo "$venv/bin/python"
}

run_tests=1 run_matrix=1 venv_only=0 selected=()
for arg in "$@"; do
  case "$arg" in
    --matrix-only) run_tests=0 ;;
    --no-matrix) run_matrix=0 ;;
    --venv-only) venv_only=1 run_tests=0 run_matrix=0 ;;
    *) selected+=("$arg") ;;
  esac
done
[[ ${#selected[@]} -gt 0 ]] || selected=("${VERSIONS[@]}")
failed=0
summary=()
pythons=()
for version in "${selected[@]}"; do
  if [[ " ${VERSIONS[*]} " != *" $version "* ]]; then
    summary+=("jax $version: not a supported version (${VERSIONS[*]})")
    failed=1
    continue
  fi
  if ! python="$(venv_for "$version")"; then
    summary+=("jax $version: FAILED to install")
    failed=1
    continue
  fi
  # The venv imports this tree's colocated_wire: one reused from another clone still named that
  # clone's (the tests run from python/, which shadows it; the matrix's script does not).
  site="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  echo "$ROOT/python" >"$site/colocated-wire.pth"
  pythons+=("$python")
  [[ $venv_only -eq 0 ]] || echo "$python"
  [[ $run_tests -eq 1 ]] || continue
  log="$VENVS/$version.log"
  # --tb=line: 0.8.3's pytest run crashes formatting some long tracebacks.
  (cd "$ROOT/python" && JAX_PLATFORMS=cpu XLA_FLAGS=--xla_force_host_platform_device_count=1024 \
    "$python" -m pytest -q -p no:cacheprovider --tb=line -rs "${TESTS[@]}") >"$log" 2>&1
  rc=$?
  result="$(tail -n 1 "$log")"
  if [[ $rc -eq 0 ]]; then
    summary+=("jax $version: ok    $result")
  else
    summary+=("jax $version: FAILED $result (log: $log)")
    failed=1
  fi
done

# The cross-version matrix: all write, then all read (each read covers every writer).
if [[ $run_matrix -eq 1 && ${#pythons[@]} -gt 0 ]]; then
  matrix_dir="$(mktemp -d)"
  markdown="${JAX_MATRIX_MD:-$ROOT/out/jax-matrix.md}"
  cross=(tests/cross_version.py)
  for python in "${pythons[@]}"; do
    (cd "$ROOT/python" && "$python" "${cross[@]}" write "$matrix_dir") >>"$matrix_dir/write.log" 2>&1 ||
      { summary+=("matrix: FAILED to write with $python (log: $matrix_dir/write.log)"); failed=1; }
  done
  for python in "${pythons[@]}"; do
    if ! (cd "$ROOT/python" && "$python" "${cross[@]}" read "$matrix_dir") >/dev/null 2>>"$matrix_dir/read.log"; then
      summary+=("matrix: FAILED reading with $python: $(tail -n 1 "$matrix_dir/read.log")")
      failed=1
    fi
  done
  (cd "$ROOT/python" && "${pythons[-1]}" "${cross[@]}" matrix "$matrix_dir" --markdown "$markdown") ||
    failed=1
  summary+=("matrix: written to $markdown (payloads and results in $matrix_dir)")
fi
if [[ $venv_only -eq 1 ]]; then # stdout holds the pythons only: failures go to stderr
  [[ ${#summary[@]} -eq 0 ]] || printf '%s\n' "${summary[@]}" >&2
else
  printf '%s\n' "${summary[@]}"
fi
exit "$failed"
