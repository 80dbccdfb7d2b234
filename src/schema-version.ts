import { type DescEnum, type DescField, getOption } from "@bufbuild/protobuf";
import { field_since, since } from "../gen/es/colocated/v1/version_pb";
import { DecodeError, EncodeError } from "./errors";
import { SCHEMA_MINOR_VERSION } from "./version";

/**
 * The minor version that introduced each construct, as the schema declares it once for both
 * languages: the `since` and `field_since` options of proto/colocated/v1/version.proto, read
 * from the generated descriptors. Absent means 1.0.
 */

// Read once per enum: getOption builds an extension container on every call, too slow per leaf.
const sinceByEnum = new WeakMap<DescEnum, Map<number, number>>();

/** The minor version that introduced an enum's value (0 for a value of 1.0 or none at all). */
export function valueSince(schema: DescEnum, value: number): number {
  let table = sinceByEnum.get(schema);
  if (!table) {
    table = new Map(schema.values.map((v) => [v.number, getOption(v, since)]));
    sinceByEnum.set(schema, table);
  }
  return table.get(value) ?? 0;
}

/** The minor version that introduced a field. */
export function fieldSince(field: DescField): number {
  return getOption(field, field_since);
}

/** "colocated.v1.1" for minor version 1. */
export function versionName(minor: number): string {
  return `colocated.v1.${minor}`;
}

/** Refuses to write a construct of a newer minor version than the encoder targets. */
export function refuseNewer(path: string, what: string, needs: number, target: number): void {
  if (needs <= target) return;
  throw new EncodeError(path, `${what} needs ${versionName(needs)}; the target is 1.${target}`);
}

/** Refuses a construct of a newer minor version than the payload's header says. */
export function requireVersion(path: string, what: string, needs: number, header: number): void {
  if (needs <= header) return;
  const detail = `${what} needs ${versionName(needs)}; the header says 1.${header}`;
  throw new DecodeError(path, "unsupported-version", detail);
}

/**
 * An enum value this decoder does not know, in a payload whose header says a newer minor
 * version than this decoder reads: the value is that version's, so the error names it.
 */
export function newerValue(path: string, what: string, header: number): DecodeError | undefined {
  if (header <= SCHEMA_MINOR_VERSION) return undefined;
  const detail = `${what} needs ${versionName(header)} (this decoder reads 1.${SCHEMA_MINOR_VERSION})`;
  return new DecodeError(path, "unsupported-version", detail);
}
