import { createHash } from "node:crypto";
import { decodeSpecs, encodeSpecs } from "../src/index";
import { buildSpecs } from "./build-specs";
import { decodeInlined, encodeInlined } from "./inlined";
import { measure, type Policy } from "./measure";
import type { SideResult } from "./results";
import type { Case } from "./scenarios";

/** The sides measured in this process: (a) colocated-wire in TypeScript and (d1) inlined protobuf. */
export const TS_SIDES = ["a", "d1"] as const;

/** Measures one TypeScript side on one case: payload size, encode, and decode-and-lift. */
export function measureTypeScript(
  c: Case,
  side: (typeof TS_SIDES)[number],
  policy: Policy,
): SideResult {
  const { treedef, leaves } = buildSpecs(c);
  const [encode, decode] =
    side === "a" ? [encodeSpecs, decodeSpecs] : [encodeInlined, decodeInlined];
  const enc = measure(() => encode(treedef, leaves), policy);
  const bytes = enc.result;
  const dec = measure(() => decode(bytes), policy);
  const back = dec.result;
  const same =
    back.leaves.length === leaves.length && back.leaves.every((l, i) => l.equals(leaves[i]));
  if (!same || !back.treedef.equals(treedef)) {
    throw new Error(`${c.id} (${side}): decoding did not give back the leaves`);
  }
  return {
    bytes: bytes.length,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    encode: enc.timing,
    decode: dec.timing,
  };
}
