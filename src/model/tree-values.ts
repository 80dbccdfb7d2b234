/** A Python tuple in a TypeScript pytree (plain arrays are lists). */
export class Tuple {
  readonly items: readonly unknown[];
  constructor(items: readonly unknown[]) {
    this.items = Object.freeze([...items]);
  }
}

/** Marks a tuple: `tuple(a, b)` is Python's `(a, b)`. */
export function tuple(...items: unknown[]): Tuple {
  return new Tuple(items);
}

/** A namedtuple instance: its class name ("module.QualName"), field names and values. */
export class NamedTuple {
  constructor(
    readonly typeName: string,
    readonly fields: readonly string[],
    readonly values: readonly unknown[],
  ) {
    if (fields.length !== values.length) {
      throw new TypeError(
        `namedtuple ${typeName} has ${fields.length} fields, got ${values.length} values`,
      );
    }
  }
}

/** A custom registered pytree node (or dataclass): its type name, opaque aux data and children. */
export class CustomNode {
  constructor(
    readonly typeName: string,
    readonly nodeData: Uint8Array,
    readonly children: readonly unknown[],
  ) {}
}
