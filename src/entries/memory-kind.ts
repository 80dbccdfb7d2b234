import { DecodeError } from "../errors";

/** Checks a sharding's memory kind: absent is the default, but empty names no memory at all. */
export function checkMemoryKind(value: string | undefined, path: string): void {
  if (value === "")
    throw new DecodeError(`${path}.memory_kind`, "invalid-value", "an empty memory kind");
}
