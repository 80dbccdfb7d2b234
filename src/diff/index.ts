/** Why two payloads differ (docs/diff.md): the comparison, its result, and the CLI's lines. */
export { DiffInputError, diffPayloads } from "./diff-payloads";
export { formatDiff } from "./format-diff";
export {
  DIFF_VERSION,
  type DiffCause,
  type DiffDetail,
  type DiffGroup,
  type DiffPath,
  type Json as DiffJson,
  type PayloadDiff,
} from "./payload-diff";
