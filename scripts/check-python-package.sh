#!/usr/bin/env bash
# Builds the Python package as pip would publish it and installs it into a fresh virtual
# environment, then checks what a user gets: colocated_wire with __version__ (package.json's
# version) and py.typed, the generated code inside it, the [worker] extra's metadata (grpcio,
# its standard services and prometheus_client), and no top-level `colocated` package.
#
# The fresh environment has no pip and no dependencies of its own: the project's pip installs
# the wheel into it (--no-deps), and a .pth line lends it the project venv's site-packages for
# JAX and the rest. A path listed in a .pth file has its own .pth files ignored, so the
# project's colocated-wire.pth (which puts python/ on the path) does not leak in: the import
# below can only find the installed copy.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_PY="$ROOT/.venv/bin/python"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Build from a copy: setuptools writes build/ and *.egg-info next to pyproject.toml.
mkdir -p "$tmp/src"
cp "$ROOT/python/pyproject.toml" "$tmp/src/"
cp -r "$ROOT/python/colocated_wire" "$tmp/src/"
find "$tmp/src" -name __pycache__ -prune -exec rm -rf {} +
PIP=("$VENV_PY" -m pip --disable-pip-version-check -q)
"${PIP[@]}" wheel --no-deps --no-build-isolation -w "$tmp/dist" "$tmp/src"
wheels=("$tmp"/dist/*.whl)
if [[ ${#wheels[@]} -ne 1 ]]; then
  echo "check-python-package: expected one wheel, got: ${wheels[*]}" >&2
  exit 1
fi

"$VENV_PY" -m venv --without-pip "$tmp/venv"
PY="$tmp/venv/bin/python"
"${PIP[@]}" --python "$PY" install --no-deps --no-index "${wheels[0]}"
purelib() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
purelib "$VENV_PY" > "$(purelib "$PY")/project-venv.pth"

version="$(node -p 'require(process.argv[1]).version' "$ROOT/package.json")"
cd "$tmp"  # not python/: the source tree must not be importable
JAX_PLATFORMS=cpu "$PY" -I - "$version" "$tmp/venv" <<'PYTHON'
import importlib.metadata as metadata
import importlib.util
import sys

want_version, venv = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)


import colocated_wire  # noqa: E402
from colocated_wire._gen.colocated.v1 import payload_pb2  # noqa: E402

check(colocated_wire.__file__.startswith(venv), f"imported from {colocated_wire.__file__}")
check(colocated_wire.__version__ == want_version,
      f"__version__ {colocated_wire.__version__} != package.json {want_version}")
check(metadata.version("colocated-wire") == want_version,
      f"metadata version {metadata.version('colocated-wire')} != {want_version}")
check(payload_pb2.Header.DESCRIPTOR.full_name == "colocated.v1.Header",
      payload_pb2.Header.DESCRIPTOR.full_name)

files = {str(f) for f in metadata.files("colocated-wire")}
check("colocated_wire/py.typed" in files, "py.typed is not installed")
check("colocated_wire/_gen/colocated/v1/payload_pb2.pyi" in files, "the .pyi stubs are not installed")
tops = {f.split("/")[0] for f in files if not f.split("/")[0].endswith(".dist-info")}
check(tops == {"colocated_wire"}, f"top-level packages installed: {sorted(tops)}")
check(importlib.util.find_spec("colocated") is None, "a top-level `colocated` is importable")

requires = metadata.requires("colocated-wire") or []
check(metadata.metadata("colocated-wire").get_all("Provides-Extra") == ["worker"],
      f"extras: {metadata.metadata('colocated-wire').get_all('Provides-Extra')}")
worker = [r for r in requires if 'extra == "worker"' in r]
check(sorted(r.split(">")[0].split("<")[0] for r in worker)
      == ["grpcio", "grpcio-health-checking", "grpcio-reflection", "prometheus_client"],
      f"worker extra requires {worker}")
core = {r.split(">")[0].split("<")[0].split("=")[0] for r in requires if "extra ==" not in r}
check(core == {"jax", "jaxlib", "protobuf", "numpy", "cloudpickle"}, f"requires {sorted(core)}")
for name in ("jax", "jaxlib"):
    spec = [r for r in requires if r.startswith(name + ">") or r.startswith(name + "<")]
    check(len(spec) == 1 and all(p in spec[0] for p in colocated_wire.SUPPORTED_JAX.split(",")),
          f"{name} requirement {spec} is not {colocated_wire.SUPPORTED_JAX}")

if failures:
    print("check-python-package: " + "; ".join(failures), file=sys.stderr)
    sys.exit(1)
print(f"check-python-package: colocated-wire {want_version} installs as colocated_wire only")
PYTHON
