import type { DecodeLimits } from "../limits";

/**
 * The shape of every message a payload holds, as the wire scan (wire.ts) needs it: each
 * field's name, whether it is a message (and which), a varint scalar, or a string or bytes,
 * and for repeated fields the limit that bounds their count. test/wire-schema.test.ts checks
 * it against proto/colocated/v1/*.proto; python/colocated_wire/wire.py reads the same facts
 * from the generated descriptors.
 */

/** A message the schema describes. */
export type MessageName =
  | "PayloadEnvelope"
  | "Header"
  | "SpecsPayload"
  | "ProgramPayload"
  | "Specs"
  | "Function"
  | "FunctionRef"
  | "PickledFunction"
  | "SharedObjectTable"
  | "Entry"
  | "DeviceList"
  | "IotaDeviceIds"
  | "Iota"
  | "PlainDeviceIds"
  | "DeltaDeviceIds"
  | "Mesh"
  | "PartitionSpecEntry"
  | "PartitionSpec"
  | "NamedSharding"
  | "SingleDeviceSharding"
  | "TileAssignment"
  | "LogicalDeviceIds"
  | "GspmdSharding"
  | "ArraySpec"
  | "TreeDef"
  | "NodeType";

/** What a field holds: a message type by name, a varint scalar, or length-delimited text. */
export type FieldType = { message: MessageName } | "varint" | "string" | "bytes";

/** One field of a message. */
export interface WireField {
  name: string;
  type: FieldType;
  /** For repeated fields: the limit on their count in one message. */
  limit?: keyof DecodeLimits;
}

const message = (name: MessageName): FieldType => ({ message: name });
const one = (name: string, type: FieldType): WireField => ({ name, type });
const many = (name: string, type: FieldType, limit: keyof DecodeLimits): WireField => ({
  name,
  type,
  limit,
});

const RANK = "maxRank";
const NODES = "maxTreeNodes";
const DEVICES = "maxDevicesPerList";
const ENTRIES = "maxTableEntries";

/** Fields by number, for every message reachable from a payload. */
export const WIRE_SCHEMA: Record<MessageName, Record<number, WireField>> = {
  PayloadEnvelope: { 1: one("header", message("Header")) },
  Header: {
    1: one("major_version", "varint"),
    2: one("minor_version", "varint"),
    3: one("kind", "varint"),
  },
  SpecsPayload: {
    1: one("header", message("Header")),
    2: one("table", message("SharedObjectTable")),
    3: one("specs", message("Specs")),
  },
  ProgramPayload: {
    1: one("header", message("Header")),
    2: one("table", message("SharedObjectTable")),
    3: one("function", message("Function")),
    4: one("input_specs", message("Specs")),
    5: one("output_specs", message("Specs")),
    6: one("devices", "varint"),
  },
  Specs: { 1: one("treedef", message("TreeDef")), 2: many("leaves", "varint", NODES) },
  Function: {
    1: one("by_name", message("FunctionRef")),
    2: one("pickled", message("PickledFunction")),
  },
  FunctionRef: { 1: one("module", "string"), 2: one("qualname", "string") },
  PickledFunction: { 1: one("pickle", "bytes"), 2: many("refs", "varint", ENTRIES) },
  SharedObjectTable: { 1: many("entries", message("Entry"), ENTRIES) },
  Entry: {
    1: one("device_list", message("DeviceList")),
    2: one("mesh", message("Mesh")),
    3: one("named_sharding", message("NamedSharding")),
    4: one("single_device_sharding", message("SingleDeviceSharding")),
    5: one("gspmd_sharding", message("GspmdSharding")),
    6: one("array_spec", message("ArraySpec")),
  },
  DeviceList: {
    1: one("iota", message("IotaDeviceIds")),
    2: one("plain", message("PlainDeviceIds")),
    3: one("delta", message("DeltaDeviceIds")),
  },
  IotaDeviceIds: { 1: one("offset", "varint"), 2: one("iota", message("Iota")) },
  Iota: { 1: many("reshape_dims", "varint", RANK), 2: many("transpose_perm", "varint", RANK) },
  PlainDeviceIds: { 1: many("ids", "varint", DEVICES) },
  DeltaDeviceIds: { 1: many("deltas", "varint", DEVICES) },
  Mesh: {
    1: one("device_list", "varint"),
    2: many("axis_sizes", "varint", RANK),
    3: many("axis_names", "string", RANK),
    4: many("axis_types", "varint", RANK),
  },
  PartitionSpecEntry: { 1: one("kind", "varint"), 2: many("axes", "string", RANK) },
  PartitionSpec: {
    1: many("entries", message("PartitionSpecEntry"), RANK),
    2: many("unreduced", "string", RANK),
    3: many("reduced", "string", RANK),
  },
  NamedSharding: {
    1: one("mesh", "varint"),
    2: one("spec", message("PartitionSpec")),
    3: one("memory_kind", "string"),
  },
  SingleDeviceSharding: { 1: one("device_id", "varint"), 2: one("memory_kind", "string") },
  TileAssignment: {
    1: many("dims", "varint", RANK),
    2: one("iota", message("Iota")),
    3: one("explicit", message("LogicalDeviceIds")),
  },
  LogicalDeviceIds: { 1: many("ids", "varint", DEVICES) },
  GspmdSharding: {
    1: one("device_list", "varint"),
    2: one("type", "varint"),
    3: one("tile_assignment", message("TileAssignment")),
    4: one("replicate_on_last_tile_dim", "varint"),
    5: many("last_tile_dims", "varint", RANK),
    6: one("memory_kind", "string"),
  },
  ArraySpec: {
    1: many("shape", "varint", RANK),
    2: one("dtype", "varint"),
    3: one("sharding", "varint"),
    4: one("weak_type", "varint"),
  },
  TreeDef: {
    1: many("kinds", "varint", NODES),
    2: many("arities", "varint", NODES),
    3: many("strings", "string", NODES),
    4: many("dict_keys", "varint", NODES),
    5: many("node_types", message("NodeType"), NODES),
    6: many("type_refs", "varint", NODES),
    7: many("node_data", "bytes", NODES),
  },
  NodeType: { 1: one("name", "string"), 2: many("fields", "string", NODES) },
};
