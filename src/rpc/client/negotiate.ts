import { SCHEMA_MAJOR_VERSION, SCHEMA_MINOR_VERSION } from "../../version";
import { VersionMismatchError } from "../errors";

/** The minor versions of colocated.v1 one side reads and writes, both ends included. */
export interface VersionRange {
  minVersion: number;
  maxVersion: number;
}

/** This library's range: every minor version it can target, 1.0 to the one it writes. */
export const DEFAULT_VERSION_RANGE: Readonly<VersionRange> = Object.freeze({
  minVersion: 0,
  maxVersion: SCHEMA_MINOR_VERSION,
});

/** A range as "1.0–1.2". */
export function formatRange(range: VersionRange): string {
  const major = SCHEMA_MAJOR_VERSION;
  return `${major}.${range.minVersion}–${major}.${range.maxVersion}`;
}

/** Throws a RangeError unless the range holds at least one non-negative integer version. */
export function checkRange(range: VersionRange, side: string): void {
  const { minVersion, maxVersion } = range;
  const whole = Number.isInteger(minVersion) && Number.isInteger(maxVersion);
  if (!whole || minVersion < 0 || minVersion > maxVersion) {
    throw new RangeError(`the ${side}'s version range ${formatRange(range)} is empty or invalid`);
  }
}

/**
 * IFRT Proxy's rule: min(client max, server max), which must lie in both ranges; otherwise a
 * VersionMismatchError naming both. The Python twin is colocated_wire/negotiate.py.
 */
export function negotiateVersion(client: VersionRange, server: VersionRange): number {
  checkRange(client, "client");
  checkRange(server, "server");
  const version = Math.min(client.maxVersion, server.maxVersion);
  if (version < client.minVersion || version < server.minVersion) {
    throw new VersionMismatchError(
      `no common colocated.v1 version: client supports ${formatRange(client)}, server ${formatRange(server)}`,
    );
  }
  return version;
}
