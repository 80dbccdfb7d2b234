import { createHash } from "node:crypto";
import { decodeSpecs, encodeSpecs } from "../../src/index";
import { buildSpecs } from "../../test/support/build-specs";
import { type Case, deviceIds, s1Cases, s3Cases } from "../../test/support/scenarios";
import { measure, measureCold, type Policy } from "../common/measure";
import { decodeInlined, encodeInlined } from "./inlined";
import { measureGeneratedLimit } from "./limit";
import type { SideResult } from "./results";

/** The sides measured in this process: (a) colocated-wire in TypeScript and (d1) inlined protobuf. */
export const TS_SIDES = ["a", "d1"] as const;

/**
 * Measures one TypeScript side on one case: payload size, encode (in S3 also cold, on objects
 * made afresh every call), and decode-and-lift.
 */
export function measureTypeScript(
  c: Case,
  side: (typeof TS_SIDES)[number],
  policy: Policy,
): SideResult {
  const ids = deviceIds(c);
  const { treedef, leaves } = buildSpecs(c, ids);
  const [encode, decode] =
    side === "a" ? [encodeSpecs, decodeSpecs] : [encodeInlined, decodeInlined];
  const enc = measure(() => encode(treedef, leaves), policy);
  const encodeCold =
    side === "a" && c.scenario === "S3"
      ? measureCold(
          () => buildSpecs(c, ids),
          (specs) => encode(specs.treedef, specs.leaves),
          policy,
        )
      : undefined;
  const bytes = enc.result;
  const dec = measure(() => decode(bytes), policy);
  const back = dec.result;
  const same =
    back.leaves.length === leaves.length && back.leaves.every((l, i) => l.equals(leaves[i]));
  if (!same || !back.treedef.equals(treedef)) {
    throw new Error(`${c.id} (${side}): decoding did not give back the leaves`);
  }
  // The limit of the main scenarios' trees; S3 and S4 have a per-device limit of their own.
  const limit =
    side === "a" && !["S3", "S4"].includes(c.scenario)
      ? measureGeneratedLimit(treedef, leaves, policy)
      : undefined;
  return {
    bytes: bytes.length,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    encode: enc.timing,
    ...(encodeCold ? { encodeCold } : {}),
    decode: dec.timing,
    ...(limit ? { limit } : {}),
  };
}

/**
 * Runs the TypeScript encoder and decoder for about `ms` on S1 and a small shuffled S3, so the
 * first case measured (S3 at 8 devices) meets compiled code, as every later case does.
 */
export function warmUpTypeScript(ms = 2_000): void {
  const cases = [...s1Cases(), ...s3Cases().filter((c) => c.id === "S3 shuffled 64")];
  const payloads = cases.map((c) => {
    const { treedef, leaves } = buildSpecs(c);
    return { treedef, leaves, bytes: encodeSpecs(treedef, leaves) };
  });
  const start = performance.now();
  while (performance.now() - start < ms) {
    for (const { treedef, leaves, bytes } of payloads) {
      encodeSpecs(treedef, leaves);
      decodeSpecs(bytes);
    }
  }
}
