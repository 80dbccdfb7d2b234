#!/usr/bin/env bash
# Generate the Python protobuf code for proto/colocated/v1/*.proto into
# python/colocated_wire/_gen/colocated/v1/ (committed, never edited by hand).
#
#   scripts/python-generate.sh          regenerate in place
#   scripts/python-generate.sh --check  fail if the committed code is stale
#
# protoc's Python output takes its module paths, and its imports of the other
# generated files, from the .proto file paths. So that the code lives inside the
# colocated_wire package rather than as a top-level `colocated` package, the
# .proto files are staged under colocated_wire/_gen/ in a temporary include root,
# with their `import "colocated/v1/..."` lines pointing at the staged paths. The
# `package colocated.v1;` lines are untouched: the messages' full names, and so
# the wire format and the gRPC method paths, stay colocated.v1.*.
#
# grpc_tools writes a *_pb2_grpc.py for every file it is given with
# --grpc_python_out, services or not, so gRPC stubs are generated only for the
# .proto files that declare a service. grpc_tools finds descriptor.proto (imported by
# limit.proto for its custom options) among the well-known protos it bundles.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
PREFIX="colocated_wire/_gen"  # where the generated code sits under python/
OUT_REL="python/$PREFIX"

generate() {  # $1: output root (the directory that will hold colocated_wire/_gen)
  local out="$1" stage f
  stage="$(mktemp -d)"
  mkdir -p "$stage/$PREFIX/colocated/v1" "$out/$PREFIX"
  for f in "$ROOT"/proto/colocated/v1/*.proto; do
    sed -E "s#^import \"colocated/v1/#import \"$PREFIX/colocated/v1/#" "$f" \
      > "$stage/$PREFIX/colocated/v1/$(basename "$f")"
  done
  cd "$stage"
  local protos=("$PREFIX"/colocated/v1/*.proto)
  "$PYTHON" -m grpc_tools.protoc -I . --python_out="$out" --pyi_out="$out" "${protos[@]}"
  local services=()
  for f in "${protos[@]}"; do
    if grep -qE '^[[:space:]]*service[[:space:]]' "$f"; then services+=("$f"); fi
  done
  if ((${#services[@]})); then
    "$PYTHON" -m grpc_tools.protoc -I . --grpc_python_out="$out" "${services[@]}"
  fi
  cd "$ROOT"
  rm -rf "$stage"
  : > "$out/$PREFIX/__init__.py"
  : > "$out/$PREFIX/colocated/__init__.py"
  : > "$out/$PREFIX/colocated/v1/__init__.py"
}

if [[ "${1:-}" == "--check" ]]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  generate "$tmp"
  if ! diff -r -x __pycache__ "$tmp/$PREFIX" "$ROOT/$OUT_REL" >"$tmp/diff.txt"; then
    cat "$tmp/diff.txt" >&2
    echo "python-generate: $OUT_REL is stale; run scripts/python-generate.sh and commit" >&2
    exit 1
  fi
  echo "python-generate: $OUT_REL is up to date"
else
  rm -rf "${ROOT:?}/$OUT_REL"
  generate "$ROOT/python"
  echo "python-generate: wrote $OUT_REL"
fi
