#!/usr/bin/env bash
# Fails when the generated code is not what the generators make from proto/: gen/ts (ts-proto's
# messages), gen/es (protoc-gen-es's descriptors, with the custom options) and python/colocated_wire/_gen.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
npx buf generate
for dir in gen/ts gen/es; do
  if [[ ! -d "$dir" ]]; then
    echo "check-generated: buf generate wrote no $dir" >&2
    exit 1
  fi
done
if [[ -n "$(git status --porcelain --untracked-files=all -- gen)" ]]; then
  echo "check-generated: gen/ differs from what buf generate makes; run 'npm run generate' and commit:" >&2
  git status --porcelain --untracked-files=all -- gen >&2
  exit 1
fi
echo "check-generated: gen/ts and gen/es are up to date"
# The Python generator runs from the project's virtual environment, made here on a fresh clone.
bash scripts/python-env.sh
bash scripts/python-generate.sh --check
# python/colocated_wire/_version.py is written from package.json's version.
node scripts/sync-version.mjs --check
