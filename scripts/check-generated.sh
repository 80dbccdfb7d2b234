#!/usr/bin/env bash
# Fails when gen/ is not what `buf generate` makes from proto/ (TypeScript and Python alike).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
npx buf generate
if [[ -n "$(git status --porcelain -- gen)" ]]; then
  echo "check-generated: gen/ differs from what buf generate makes; run 'npm run generate' and commit:" >&2
  git status --porcelain -- gen >&2
  exit 1
fi
echo "check-generated: gen/ is up to date"
