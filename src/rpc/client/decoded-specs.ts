import { decodeSpecs } from "../../decode";
import type { Specs } from "../../model/program";

/** How many distinct output SpecsPayloads a client keeps decoded, and the largest it keeps. */
const MAX_REMEMBERED = 64;
const MAX_REMEMBERED_BYTES = 64 << 10;

/**
 * Output SpecsPayloads decoded once per distinct bytes: a program called again and again
 * answers with the same specs, and decoding them (check and lift) cost more than the rest of
 * reading the answer. Equal bytes decode to equal specs at one version, so a repeat is only
 * looked up; each result gets its own leaves array, whose (immutable) leaves are shared.
 */
export class DecodedSpecs {
  private readonly known = new Map<string, Specs>();

  constructor(private readonly maxMinorVersion: number) {}

  /** The specs of these SpecsPayload bytes; throws DecodeError as decodeSpecs does. */
  decode(bytes: Uint8Array): Specs {
    if (bytes.length > MAX_REMEMBERED_BYTES) {
      return decodeSpecs(bytes, { maxMinorVersion: this.maxMinorVersion });
    }
    const key = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("latin1");
    let specs = this.known.get(key);
    if (specs === undefined) {
      specs = decodeSpecs(bytes, { maxMinorVersion: this.maxMinorVersion });
      if (this.known.size >= MAX_REMEMBERED) {
        this.known.delete(this.known.keys().next().value as string);
      }
      this.known.set(key, specs);
    }
    return { treedef: specs.treedef, leaves: [...specs.leaves] };
  }
}
