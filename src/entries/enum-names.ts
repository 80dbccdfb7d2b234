/**
 * Names for the values of a generated enum, derived from its members: `SHARDING_TYPE_OTHER`
 * becomes "other" by dropping the prefix and renaming the rest. The unspecified value and
 * ts-proto's UNRECOGNIZED have no name.
 */

/** The member names of a generated enum after `prefix`, UNSPECIFIED left out. */
export type Suffixes<E, P extends string> = Exclude<
  keyof E extends infer K ? (K extends `${P}${infer R}` ? R : never) : never,
  "UNSPECIFIED"
>;

/** A generated enum object, as ts-proto writes it: names to numbers and numbers to names. */
type GeneratedEnum = Record<string, string | number>;

/** Both ways between an enum's numbers and their names, in number order. */
export interface EnumNames<N extends string> {
  /** Every name, in number order. */
  readonly names: readonly N[];
  /** The name of a number, or undefined when it has none. */
  name(value: number): N | undefined;
  /** The number of a name, or undefined when it is not one. */
  value(name: string): number | undefined;
  /** The numbers by name, for lookups in a hot loop over names known to be valid. */
  readonly values: Readonly<Record<N, number>>;
}

/**
 * The names of `values`' members after `prefix`, each renamed by `rename`. `N` is the
 * model's name type and `Wire` the same names derived from the generated enum's type: the
 * call compiles only while they are equal.
 */
export function enumNames<N extends string, Wire extends string>(
  values: GeneratedEnum,
  prefix: string,
  rename: (suffix: string) => string,
  ..._exact: Same<N, Wire> extends true ? [] : [namesDiffer: never]
): EnumNames<N> {
  const byValue = new Map<number, N>();
  for (const [member, value] of Object.entries(values)) {
    if (typeof value !== "number" || value <= 0 || !member.startsWith(prefix)) continue;
    byValue.set(value, rename(member.slice(prefix.length)) as N);
  }
  const ordered = [...byValue].sort(([a], [b]) => a - b);
  const byName = new Map<string, number>(ordered.map(([value, name]) => [name, value]));
  return {
    names: ordered.map(([, name]) => name),
    name: (value) => byValue.get(value),
    value: (name) => byName.get(name),
    values: Object.fromEntries(byName) as Record<N, number>,
  };
}

/** "FLOAT8_E4M3FN" as "float8_e4m3fn". */
export const lowercase = (suffix: string) => suffix.toLowerCase();

/** "EXPLICIT" as "Explicit". */
export const capitalized = (suffix: string) => suffix[0] + suffix.slice(1).toLowerCase();

/** True exactly when two types are equal: a constant of this type compiles only then. */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
