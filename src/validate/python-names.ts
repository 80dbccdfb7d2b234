/** Python's hard keywords (keyword.kwlist): collections.namedtuple refuses them as names. */
const PYTHON_KEYWORDS = new Set(
  (
    "False None True and as assert async await break class continue def del elif else except " +
    "finally for from global if import in is lambda nonlocal not or pass raise return try " +
    "while with yield"
  ).split(" "),
);

// str.isidentifier(): an XID_Start character or "_", then XID_Continue characters.
const IDENTIFIER = /^[\p{XID_Start}_]\p{XID_Continue}*$/u;

/** Why a namedtuple field name is refused, or undefined: as collections.namedtuple checks it. */
export function fieldNameProblem(name: string, before: readonly string[]): string | undefined {
  if (!IDENTIFIER.test(name)) return `field name "${name}" is not a Python identifier`;
  if (PYTHON_KEYWORDS.has(name)) return `field name "${name}" is a Python keyword`;
  if (name.startsWith("_")) return `field name "${name}" starts with an underscore`;
  if (before.includes(name)) return `field name "${name}" repeats`;
  return undefined;
}
