#!/usr/bin/env bash
# The npm package as a user gets it: pack it, install the tarball into an empty project, import
# both entries from ESM and CommonJS and round-trip a payload, run the bin, and bundle the core
# entry for the browser, where any Node built-in is an error.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

tarball=$(npm pack --silent --pack-destination "$work" | tail -n 1)
echo "packed $tarball: $(tar -tzf "$work/$tarball" | wc -l | tr -d ' ') files"
# Only what users need: no tests, Python, sources of the tests or maps.
if tar -tzf "$work/$tarball" | grep -Ev '^package/(dist/src/|dist/gen/(ts|es)/|package\.json$|README\.md$|LICENSE$|CHANGELOG\.md$|docs/versioning\.md$)'; then
  echo "check-package: the files above should not be in the package" >&2
  exit 1
fi

app="$work/app"
mkdir "$app"
cd "$app"
echo '{ "name": "app", "private": true }' >package.json
npm install --no-audit --no-fund --silent "$work/$tarball"

# Round-trips the example specs through encode, decode and the JSON form.
cat >esm.mjs <<'EOF'
import { decodeSpecs, encodeSpecs, payloadToJson, ShapeDtypeStruct, treeFlatten } from "colocated-wire";
import { callInputs, WorkerClient } from "colocated-wire/rpc";
const { treedef, leaves } = treeFlatten([new ShapeDtypeStruct([2, 3], "float32")]);
const bytes = encodeSpecs(treedef, leaves);
const [leaf] = decodeSpecs(bytes).leaves;
if (leaf.dtype !== "float32" || leaf.shape.join() !== "2,3") throw new Error(`esm: got ${leaf}`);
if (payloadToJson(bytes).header.kind !== "PAYLOAD_KIND_SPECS") throw new Error("esm: JSON form");
if (typeof WorkerClient.connect !== "function" || typeof callInputs !== "function") {
  throw new Error("esm: colocated-wire/rpc");
}
console.log("esm: ok");
EOF
cat >cjs.cjs <<'EOF'
const { decodeSpecs, encodeSpecs, ShapeDtypeStruct, treeFlatten } = require("colocated-wire");
const { WorkerClient } = require("colocated-wire/rpc");
const { treedef, leaves } = treeFlatten({ x: new ShapeDtypeStruct([4], "int8") });
const bytes = encodeSpecs(treedef, leaves);
const [leaf] = decodeSpecs(bytes).leaves;
if (leaf.dtype !== "int8" || leaf.shape.join() !== "4") throw new Error(`cjs: got ${leaf}`);
if (typeof WorkerClient.connect !== "function") throw new Error("cjs: colocated-wire/rpc");
console.log("cjs: ok");
EOF
node esm.mjs
node cjs.cjs

# Both module systems are typed: the same code type-checks as ESM and as CommonJS.
cat >typed.mts <<'EOF'
import { decodeSpecs, encodeSpecs, ShapeDtypeStruct, treeFlatten } from "colocated-wire";
import type { WorkerClient } from "colocated-wire/rpc";
const flat = treeFlatten<ShapeDtypeStruct>([new ShapeDtypeStruct([1], "bool")]);
const leaves: ShapeDtypeStruct[] = decodeSpecs(encodeSpecs(flat.treedef, flat.leaves)).leaves;
export const connect: typeof WorkerClient.connect | undefined = leaves.length ? undefined : undefined;
EOF
cp typed.mts typed.cts
"$root/node_modules/.bin/tsc" --noEmit --strict --module node16 --moduleResolution node16 \
  --target es2022 --types node --typeRoots "$root/node_modules/@types" typed.mts typed.cts
echo "types: ok (.mts and .cts)"

npx --no-install colocated-wire --help >help.txt
grep -q "colocated-wire" help.txt || { echo "check-package: the bin's --help" >&2; exit 1; }
echo "bin: ok"

# The inspector page's script ships in the package: inspect --html inlines it.
npx --no-install colocated-wire inspect --html page.html
grep -q 'id="picker"' page.html && [ "$(wc -c <page.html)" -gt 50000 ] ||
  { echo "check-package: inspect --html wrote no page script" >&2; exit 1; }
echo "inspector page: ok"

# The core entry bundles for a browser; esbuild fails on any import of a Node built-in there.
echo 'export * from "colocated-wire";' >browser.mjs
"$root/node_modules/.bin/esbuild" browser.mjs --bundle --platform=browser --format=esm \
  --log-level=warning --outfile=browser.bundle.mjs
if grep -n "require(\"node:\|from \"node:\|grpc" browser.bundle.mjs | head -5 | grep .; then
  echo "check-package: the browser bundle mentions Node built-ins or grpc" >&2
  exit 1
fi
echo "browser bundle: ok ($(wc -c <browser.bundle.mjs) bytes)"
