import { HeaderSchema } from "../../gen/es/colocated/v1/payload_pb";
import {
  type Header,
  PayloadEnvelope,
  WriterLanguage,
  type Writer as WriterMessage,
} from "../../gen/ts/colocated/v1/payload";
import { enumNames, lowercase, type Suffixes } from "../entries/enum-names";
import { DecodeError } from "../errors";
import { PACKAGE_VERSION } from "../package-version";
import { fieldSince, requireVersion } from "../schema-version";

/**
 * Who wrote a payload (colocated.v1.3): the library, its version and language, and for a
 * Python writer its interpreter's minor version, JAX's version and, when the payload holds a
 * pickle, cloudpickle's. A reader shows it, and Python refuses pickles it cannot read by it.
 */

/** A writer's language by name: WRITER_LANGUAGE_PYTHON is "python". */
export type WriterLanguageName = Lowercase<Suffixes<typeof WriterLanguage, "WRITER_LANGUAGE_">>;

/** Writer languages by name, derived from the generated enum. */
const LANGUAGES = enumNames<WriterLanguageName, WriterLanguageName>(
  WriterLanguage,
  "WRITER_LANGUAGE_",
  lowercase,
);

/** The writer a payload's header names; the parts it does not say are absent. */
export interface Writer {
  library: string;
  version: string;
  language?: WriterLanguageName;
  python?: string;
  jax?: string;
  cloudpickle?: string;
}

/** The minor version that introduced the header's writer. */
export const WRITER_SINCE = fieldSince(HeaderSchema.field.writer);

/** This library as a payload's writer. */
export function thisWriter(): Writer {
  return { library: "colocated-wire", version: PACKAGE_VERSION, language: "typescript" };
}

/**
 * The message each writer was lifted from and what it said then, so that writing one again
 * keeps what this reader did not know (a language of a newer version, fields it lacks). Held
 * weakly, by the writer.
 */
const liftedFrom = new WeakMap<Writer, { message: WriterMessage; as: Writer }>();

/** The header's Writer message for a writer: the very message it was lifted from, if unchanged. */
export function lower(writer: Writer): WriterMessage {
  const from = liftedFrom.get(writer);
  if (from && PARTS.every((part) => from.as[part] === writer[part])) return from.message;
  return {
    library: writer.library,
    version: writer.version,
    language: (writer.language && LANGUAGES.value(writer.language)) ?? 0,
    python: writer.python ?? "",
    jax: writer.jax ?? "",
    cloudpickle: writer.cloudpickle ?? "",
  };
}

/** A header's writer: what it does not say (or says in a newer version's terms) is left out. */
export function lift(message: WriterMessage): Writer {
  const writer: Writer = { library: message.library, version: message.version };
  const language = LANGUAGES.name(message.language);
  if (language) writer.language = language;
  if (message.python) writer.python = message.python;
  if (message.jax) writer.jax = message.jax;
  if (message.cloudpickle) writer.cloudpickle = message.cloudpickle;
  liftedFrom.set(writer, { message, as: { ...writer } });
  return writer;
}

const PARTS = ["library", "version", "language", "python", "jax", "cloudpickle"] as const;

/** A writer is written only under a header of 1.3 or later. */
export function check(header: Header): void {
  if (header.writer === undefined) return;
  requireVersion("header.writer", "a writer", WRITER_SINCE, header.minorVersion);
}

/** The writer a payload's header names, if any (the header alone is read; nothing else is checked). */
export function payloadWriter(bytes: Uint8Array): Writer | undefined {
  let header: Header | undefined;
  try {
    header = PayloadEnvelope.decode(bytes).header;
  } catch (error) {
    const detail = `not a valid protobuf message (${(error as Error).message})`;
    throw new DecodeError("payload", "malformed", detail);
  }
  return header?.writer && lift(header.writer);
}

/** A writer in one line: "colocated-wire 0.1.0 (python 3.12, jax 0.10.2, cloudpickle 3.1.1)". */
export function describeWriter(writer: Writer): string {
  const runtime: string[] = [];
  if (writer.language === "python") runtime.push(`python ${writer.python ?? "?"}`);
  else runtime.push(writer.language ?? "language unknown");
  if (writer.jax) runtime.push(`jax ${writer.jax}`);
  if (writer.cloudpickle) runtime.push(`cloudpickle ${writer.cloudpickle}`);
  return `${writer.library} ${writer.version} (${runtime.join(", ")})`;
}
