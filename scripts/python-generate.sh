#!/usr/bin/env bash
# Generate the Python protobuf code for proto/colocated/v1/*.proto into
# python/colocated/v1/ (committed, never edited by hand).
#
#   scripts/python-generate.sh          regenerate in place
#   scripts/python-generate.sh --check  fail if the committed code is stale
#
# grpc_tools writes a *_pb2_grpc.py for every file it is given with
# --grpc_python_out, services or not, so gRPC stubs are generated only for the
# .proto files that declare a service. grpc_tools finds descriptor.proto (imported by
# limit.proto for its custom options) among the well-known protos it bundles.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
OUT_REL="python/colocated/v1"

generate() {  # $1: output root (the directory that will hold colocated/v1)
  local out="$1" f
  mkdir -p "$out/colocated/v1"
  cd "$ROOT"
  local protos=(proto/colocated/v1/*.proto)
  "$PYTHON" -m grpc_tools.protoc -I proto --python_out="$out" --pyi_out="$out" "${protos[@]}"
  local services=()
  for f in "${protos[@]}"; do
    if grep -qE '^[[:space:]]*service[[:space:]]' "$f"; then services+=("$f"); fi
  done
  if ((${#services[@]})); then
    "$PYTHON" -m grpc_tools.protoc -I proto --grpc_python_out="$out" "${services[@]}"
  fi
  : > "$out/colocated/__init__.py"
  : > "$out/colocated/v1/__init__.py"
}

if [[ "${1:-}" == "--check" ]]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  generate "$tmp"
  if ! diff -r -x __pycache__ "$tmp/colocated" "$ROOT/python/colocated" >"$tmp/diff.txt"; then
    cat "$tmp/diff.txt" >&2
    echo "python-generate: $OUT_REL is stale; run scripts/python-generate.sh and commit" >&2
    exit 1
  fi
  echo "python-generate: $OUT_REL is up to date"
else
  rm -rf "$ROOT/python/colocated"
  generate "$ROOT/python"
  echo "python-generate: wrote $OUT_REL"
fi
