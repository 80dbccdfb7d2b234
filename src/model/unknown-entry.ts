import { base64Encode } from "@bufbuild/protobuf/wire";
import { ValueObject } from "./value-key";

/**
 * A table entry of a kind from a newer minor version. It is kept as its exact bytes, so a
 * payload that refers to it re-encodes unchanged.
 */
export class UnknownEntry extends ValueObject {
  constructor(readonly bytes: Uint8Array) {
    super();
  }

  protected computeKey(): string {
    return `UnknownEntry(${base64Encode(this.bytes)})`;
  }
}
