/**
 * What the diff needs of a payload's message besides its model: the header, the table's entries
 * (which name the entries they refer to), and the leaf references each part writes, read from
 * the bytes (already decoded, so valid) without building the rest again. The generated decoder
 * reads a packed list a value and a `push` at a time, which for 10,000 leaves cost as much as
 * decoding the payload; here they are read in one tight loop (as packed-ids.ts reads device ids).
 */
import type { DescMessage } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { SpecsSchema } from "../../gen/es/colocated/v1/payload_pb";
import { FunctionMessage, Header } from "../../gen/ts/colocated/v1/payload";
import { type Entry, SharedObjectTable } from "../../gen/ts/colocated/v1/table";

/** A payload's header, table, parts' written leaf references, devices and function. */
export interface PayloadRefs {
  minorVersion: number;
  entries: Entry[];
  /** Each Specs field's written leaf references, by the field's name ("specs", "inputSpecs"). */
  leaves: Map<string, Int32Array>;
  /** A program's device list entry. */
  devices?: number;
  /** A program's function message. */
  fn?: FunctionMessage;
}

const LEAVES = SpecsSchema.field.leaves.number;

/** Reads a payload of message `schema` for what the diff needs (fields repeated are merged). */
export function readPayloadRefs(bytes: Uint8Array, schema: DescMessage): PayloadRefs {
  const refs: PayloadRefs = { minorVersion: 0, entries: [], leaves: new Map() };
  const reader = new BinaryReader(bytes);
  while (reader.pos < reader.len) {
    const [number, wireType] = reader.tag();
    const field = schema.fields.find((f) => f.number === number);
    const name = field?.localName;
    if (name === "header") refs.minorVersion = Header.decode(reader.bytes()).minorVersion;
    else if (name === "table")
      refs.entries.push(...SharedObjectTable.decode(reader.bytes()).entries);
    else if (name === "function") refs.fn = FunctionMessage.decode(reader.bytes());
    else if (name === "devices") refs.devices = reader.uint32();
    else if (field?.message?.typeName === SpecsSchema.typeName && name) {
      const before = refs.leaves.get(name);
      const more = leafRefs(reader.bytes());
      refs.leaves.set(name, before ? concat(before, more) : more);
    } else reader.skip(wireType);
  }
  return refs;
}

/** The leaf references of a Specs message's bytes. */
function leafRefs(specs: Uint8Array): Int32Array {
  let out: Int32Array = new Int32Array(0);
  const reader = new BinaryReader(specs);
  while (reader.pos < reader.len) {
    const [number, wireType] = reader.tag();
    if (number !== LEAVES) reader.skip(wireType);
    else if (wireType === WireType.Varint) out = concat(out, Int32Array.of(reader.uint32()));
    else {
      const list = reader.bytes();
      out = concat(out, packedVarints(list));
    }
  }
  return out;
}

/** Packed varints, counted first (one ends at each byte below 0x80), then read. */
function packedVarints(list: Uint8Array): Int32Array {
  let count = 0;
  for (let i = 0; i < list.length; i++) if (list[i] < 0x80) count++;
  const out = new Int32Array(count);
  for (let pos = 0, k = 0; k < count; k++) {
    let value = 0;
    let scale = 1;
    let byte: number;
    do {
      byte = list[pos++];
      value += (byte & 0x7f) * scale;
      scale *= 128;
    } while (byte >= 0x80);
    out[k] = value;
  }
  return out;
}

function concat(a: Int32Array, b: Int32Array): Int32Array {
  if (a.length === 0) return b;
  const out = new Int32Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
