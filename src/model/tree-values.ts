import type { DictKey, Pickled } from "./tree-dict-keys";

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

/** A collections.OrderedDict: its entries in insertion order (colocated.v1.1). */
export class OrderedDict {
  readonly entries: readonly (readonly [DictKey, unknown])[];
  constructor(entries: Iterable<readonly [DictKey, unknown]>) {
    this.entries = Object.freeze([...entries]);
  }
}

/**
 * A collections.defaultdict (colocated.v1.1): its default_factory by "module.QualName" (null
 * for None) and its entries; a pytree lists them sorted, as JAX does.
 */
export class DefaultDict {
  readonly entries: readonly (readonly [DictKey, unknown])[];
  constructor(
    readonly defaultFactory: string | null | Pickled,
    entries: Iterable<readonly [DictKey, unknown]>,
  ) {
    this.entries = Object.freeze([...entries]);
  }
}
