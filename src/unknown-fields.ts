/**
 * Unknown fields are what a newer minor version added and this schema does not name. ts-proto
 * keeps them on each decoded message as `_unknownFields`; these helpers find them and carry
 * them from an old message onto a freshly lowered one, so nothing a newer peer wrote is lost.
 */

type Loose = Record<string, unknown>;

/** How to walk: what to skip, and whether the second side is proto3 JSON rather than a message. */
export interface WalkOptions {
  skip?: ReadonlySet<unknown>;
  /** In proto3 JSON a oneof case is a field of the parent, named by the case. */
  secondIsJson?: boolean;
}

/** Visits two messages side by side, through sub-messages, lists and oneof cases. */
export function walkMessages(
  a: unknown,
  b: unknown,
  visit: (a: Loose, b: Loose) => void,
  options: WalkOptions = {},
): void {
  if (!isMessage(a) || !isMessage(b) || options.skip?.has(a)) return;
  visit(a, b);
  for (const [key, value] of Object.entries(a)) {
    if (key === "_unknownFields" || value instanceof Uint8Array) continue;
    if (isMessage(value) && typeof value.$case === "string") {
      walkMessages(value.value, oneofCounterpart(b, key, value.$case, options), visit, options);
    } else if (Array.isArray(value)) {
      const items = b[key];
      // Lists hold scalars or messages throughout; a list of ids need not be walked.
      if (!Array.isArray(items) || !isMessage(value[0])) continue;
      for (const [i, item] of value.entries()) walkMessages(item, items[i], visit, options);
    } else {
      walkMessages(value, b[key], visit, options);
    }
  }
}

function oneofCounterpart(b: Loose, key: string, $case: string, options: WalkOptions): unknown {
  if (options.secondIsJson) return b[$case];
  const other = b[key];
  return isMessage(other) && other.$case === $case ? other.value : undefined;
}

/** Whether a message or any message inside it carries unknown fields. */
export function hasUnknownFields(message: unknown): boolean {
  let found = false;
  walkMessages(message, message, (m) => {
    if (!found && isMessage(m._unknownFields) && Object.keys(m._unknownFields).length > 0)
      found = true;
  });
  return found;
}

/** Copies the unknown fields of `from` onto the matching messages of `to`, skipping `skip`. */
export function graftUnknownFields(
  from: unknown,
  to: unknown,
  skip: ReadonlySet<unknown> = new Set(),
): void {
  walkMessages(
    from,
    to,
    (a, b) => {
      if (isMessage(a._unknownFields) && Object.keys(a._unknownFields).length > 0) {
        b._unknownFields = a._unknownFields;
      }
    },
    { skip },
  );
}

/** A message object as ts-proto makes them: not an array, not bytes. */
export function isMessage(value: unknown): value is Loose {
  return (
    typeof value === "object" &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Uint8Array)
  );
}
