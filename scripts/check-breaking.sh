#!/usr/bin/env bash
# Fails when proto/ breaks wire or JSON compatibility with the committed v1 baseline
# (buf.yaml's WIRE_JSON rules). The baseline is a buf image of the released schema; it
# changes only deliberately, after a compatible addition is released:
#
#   npx buf build --exclude-source-info -o proto/baseline/colocated-v1.binpb
#
# Comparing against the branch itself ('.git#branch=main') would compare main with main.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
npx buf breaking --against proto/baseline/colocated-v1.binpb
echo "check-breaking: proto/ is compatible with proto/baseline/colocated-v1.binpb"
