import { execFileSync } from "node:child_process";
import path from "node:path";

/** A JAX the P cases run under, each side against that version's own serialization. */
export interface PluginJax {
  /** A release with a venv of scripts/jax-versions.sh, or "venv": the repository's .venv. */
  version: string;
  /** The ids of the cases run under it; every case if absent. */
  cases?: readonly string[];
}

/**
 * The oldest JAX whose CPU runs a colocated function, and whose colocated Python has the CPU
 * device API a program uses (`colocated_cpu_devices`: 0.4.38 and 0.5.3 fail it, their CPU
 * devices have no `colocation_id`). Like 0.7.2 it predates JAX 0.8's table of shared objects
 * (serialization.py's `_CommonObjectState`), which pickles each equal Mesh, NamedSharding and
 * DeviceList once, so its figures show what that change bought. Before 0.8 the CPU compiles no
 * colocated program and runs the function in process, writing the programs but never reading
 * them back; plugin_bench.py reads them back itself (its docstring).
 */
export const OLD_JAX = "0.6.2";

/**
 * The newest supported JAX first, .venv's (python/requirements.txt, the one every other
 * section measures), then the oldest on fewer cases: P 1000 32x32 shows nothing the other three
 * do not, and skipping it keeps the old version's part of a full run to about a minute.
 */
export const PLUGIN_JAX: readonly PluginJax[] = [
  { version: "venv" },
  { version: OLD_JAX, cases: ["P 1 2x4", "P 1000 8x8", "P 1000 8x8 fresh", "P 10000 32x32"] },
];

/** A version's name before its process says which JAX it has. */
export function jaxLabel(jax: PluginJax): string {
  return jax.version === "venv" ? ".venv" : jax.version;
}

/**
 * The python of a version: .venv's (run.ts has made sure it exists), or the venv
 * scripts/jax-versions.sh tests that release with, which `--venv-only` builds if missing
 * (its progress on stderr, the python alone on stdout).
 */
export function pythonFor(root: string, jax: PluginJax): string {
  if (jax.version === "venv") return path.join(root, ".venv", "bin", "python");
  const script = path.join(root, "scripts", "jax-versions.sh");
  return execFileSync("bash", [script, "--venv-only", jax.version], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  }).trim();
}
