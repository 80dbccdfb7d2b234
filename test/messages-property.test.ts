import {
  create,
  type DescMessage,
  equals,
  fromBinary,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import fc from "fast-check";
import {
  ProgramPayloadSchema,
  type SpecsPayload,
  SpecsPayloadSchema,
} from "../gen/es/colocated/v1/payload_pb";
import {
  ExecuteResponseSchema,
  ExecuteShardedRequestSchema,
  ExecuteShardedResponseSchema,
  ExecuteStartSchema,
  GetTopologyResponseSchema,
  LoadProgramRequestSchema,
  RelayRequestSchema,
  RelayResponseSchema,
  type SessionCall,
  SessionRequestSchema,
  SessionResponseSchema,
  type ShardChunk,
  ShardChunkSchema,
} from "../gen/es/colocated/v1/service_pb";
import { readExecuteResponse } from "../src/rpc/messages/execute-response";
import { loadRequest } from "../src/rpc/messages/load-program-request";
import { addRelayedMessage, childrenMessage } from "../src/rpc/messages/relay-request";
import { readRelayResponse } from "../src/rpc/messages/relay-response";
import { callTail, cancelMessage, SessionCallTemplate } from "../src/rpc/messages/session-request";
import { readSessionResponse } from "../src/rpc/messages/session-response";
import { chunkMessage, END_MESSAGE } from "../src/rpc/messages/sharded-request";
import { type ChunkView, readShardedResponse } from "../src/rpc/messages/sharded-response";
import { readTopologyBytes } from "../src/rpc/messages/topology-response";
import { ShardLayout } from "../src/rpc/sharded/shard-layout";

// Every message written or read by hand (src/rpc/messages/) against protobuf-es's generated
// codec: what a hand-written writer writes, the generated decoder reads as written; what the
// generated encoder writes, with unknown fields at every level, a hand-written reader reads
// as the generated decoder does.

const RUNS = { seed: 20_261_206, numRuns: Number(process.env.FUZZ_CASES ?? 200) };

/** Unknown fields, as a newer schema's writer adds them: numbers no colocated.v1 message uses. */
const unknown = fc.array(
  fc.oneof(
    fc
      .record({
        no: fc.integer({ min: 1000, max: 9999 }),
        v: fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
      })
      .map(({ no, v }) => ({
        no,
        wireType: WireType.Varint,
        data: new BinaryWriter().uint64(v).finish(),
      })),
    fc
      .record({ no: fc.integer({ min: 1000, max: 9999 }), b: fc.uint8Array({ maxLength: 12 }) })
      .map(({ no, b }) => ({
        no,
        wireType: WireType.LengthDelimited,
        data: new BinaryWriter().bytes(b).finish(),
      })),
  ),
  { maxLength: 3 },
);

const u32 = fc.integer({ min: 0, max: 2 ** 32 - 1 });
const u53 = fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER });

/** Unknown fields as protobuf-es keeps them: each value's bytes after its tag. */
type Unknown = { no: number; wireType: WireType; data: Uint8Array }[];

/** A message of `schema` with `init`, carrying `extra` unknown fields. */
function message<D extends DescMessage>(schema: D, init: object, extra: Unknown): MessageShape<D> {
  const m = create(schema, init as never);
  if (extra.length) m.$unknown = extra;
  return m;
}

const shardChunk = fc
  .record({
    leaf: u32,
    index: fc.option(
      fc.record({
        start: fc.array(u53, { maxLength: 4 }),
        stop: fc.array(u53, { maxLength: 4 }),
        u: unknown,
      }),
      { nil: undefined },
    ),
    offset: u53,
    data: fc.uint8Array({ maxLength: 40 }),
    last: fc.boolean(),
    u: unknown,
  })
  .map(({ index, offset, u, ...rest }) =>
    message(
      ShardChunkSchema,
      {
        ...rest,
        offset: BigInt(offset),
        index:
          index &&
          message(
            ShardChunkSchema.field.index.message as never,
            { start: index.start.map(BigInt), stop: index.stop.map(BigInt) },
            index.u,
          ),
      },
      u,
    ),
  );

const specsPayload = fc
  .record({ version: u32, u: unknown })
  .map(({ version, u }) => message(SpecsPayloadSchema, { version }, u));

const callStatus = fc.record({ code: u32, message: fc.string({ maxLength: 20 }), u: unknown });

/** A hand-read chunk as the generated decoder's ShardChunk has it. */
function chunkOf(view: ChunkView) {
  return {
    leaf: view.leaf,
    index: view.index && { start: view.index.start.map(BigInt), stop: view.index.stop.map(BigInt) },
    offset: BigInt(view.offset),
    data: Buffer.from(view.data),
    last: view.last,
  };
}

/** The generated decoder's ShardChunk, its unknown fields aside. */
function known(chunk: ShardChunk) {
  return {
    leaf: chunk.leaf,
    index: chunk.index && { start: chunk.index.start, stop: chunk.index.stop },
    offset: chunk.offset,
    data: Buffer.from(chunk.data),
    last: chunk.last,
  };
}

/** A reader's output specs bytes hold what the generated decoder read, or both are absent. */
function expectSameSpecs(got: Uint8Array | undefined, want: SpecsPayload | undefined): void {
  expect(got === undefined).toBe(want === undefined);
  if (got !== undefined && want !== undefined) {
    expect(equals(SpecsPayloadSchema, fromBinary(SpecsPayloadSchema, got), want)).toBe(true);
  }
}

describe("readers read what the generated encoder writes, unknown fields skipped", () => {
  test("GetTopologyResponse: its numbers, and its devices' bytes as the encoder wrote them", () => {
    const device = fc.record({
      id: fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
      processIndex: u32,
      platform: fc.string({ maxLength: 8 }),
      kind: fc.string({ maxLength: 8 }),
      coords: fc.array(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { maxLength: 3 }),
      u: unknown,
    });
    const response = fc.record({
      processCount: u32,
      processIndex: u32,
      devices: fc.array(device, { maxLength: 4 }),
      u: unknown,
    });
    fc.assert(
      fc.property(response, (r) => {
        const devices = r.devices.map((d) =>
          message(GetTopologyResponseSchema.field.devices.message as never, d, d.u),
        );
        const init = { processCount: r.processCount, processIndex: r.processIndex, devices };
        const bytes = toBinary(
          GetTopologyResponseSchema,
          message(GetTopologyResponseSchema, init, r.u),
        );
        const want = fromBinary(GetTopologyResponseSchema, bytes);
        const got = readTopologyBytes(bytes);
        expect([got.processCount, got.processIndex]).toEqual([
          want.processCount,
          want.processIndex,
        ]);
        // protobuf-es writes the unknown fields last: the devices lie together, as a worker's do.
        const only = create(GetTopologyResponseSchema, { devices: want.devices });
        expect(Buffer.from(got.devices ?? [])).toEqual(
          Buffer.from(toBinary(GetTopologyResponseSchema, only)),
        );
      }),
      RUNS,
    );
  });

  test("ExecuteShardedResponse", () => {
    const part = fc.oneof(
      specsPayload.map((value) => ({ case: "outputSpecs" as const, value })),
      shardChunk.map((value) => ({ case: "chunk" as const, value })),
      fc.boolean().map((value) => ({ case: "end" as const, value })),
    );
    fc.assert(
      fc.property(part, unknown, (p, u) => {
        const bytes = toBinary(
          ExecuteShardedResponseSchema,
          message(ExecuteShardedResponseSchema, { part: p }, u),
        );
        const want = fromBinary(ExecuteShardedResponseSchema, bytes).part;
        const got = readShardedResponse(bytes);
        expect(got?.$case).toBe(want.case);
        if (got?.$case === "chunk" && want.case === "chunk")
          expect(chunkOf(got.value)).toEqual(known(want.value));
        if (got?.$case === "outputSpecs" && want.case === "outputSpecs") {
          expectSameSpecs(got.value, want.value);
        }
      }),
      RUNS,
    );
  });

  test("SessionResponse", () => {
    const response = fc.record({
      id: u53,
      outputSpecs: fc.option(specsPayload, { nil: undefined }),
      outputs: fc.array(shardChunk, { maxLength: 3 }),
      end: fc.boolean(),
      status: fc.option(callStatus, { nil: undefined }),
      outputSpecsAsBefore: fc.boolean(),
      u: unknown,
    });
    fc.assert(
      fc.property(response, ({ id, status, u, ...rest }) => {
        const init = {
          ...rest,
          id: BigInt(id),
          status:
            status &&
            message(SessionResponseSchema.field.status.message as never, status, status.u),
        };
        const bytes = toBinary(SessionResponseSchema, message(SessionResponseSchema, init, u));
        const want = fromBinary(SessionResponseSchema, bytes);
        const got = readSessionResponse(bytes);
        expect(BigInt(got.id)).toBe(want.id);
        expect([got.end, got.outputSpecsAsBefore]).toEqual([want.end, want.outputSpecsAsBefore]);
        expect(got.outputs.map(chunkOf)).toEqual(want.outputs.map(known));
        expect(got.status).toEqual(
          want.status && { code: want.status.code, message: want.status.message },
        );
        expectSameSpecs(got.outputSpecs, want.outputSpecs);
      }),
      RUNS,
    );
  });

  test("RelayResponse", () => {
    const relayed = fc.record({ child: u32, session: u32, u: unknown });
    const response = fc.record({
      messages: fc.array(
        fc.record({
          child: u32,
          session: u32,
          message: fc.uint8Array({ maxLength: 20 }),
          u: unknown,
        }),
        { maxLength: 3 },
      ),
      ends: fc.array(
        fc.record({
          child: u32,
          session: u32,
          status: fc.option(callStatus, { nil: undefined }),
          u: unknown,
        }),
        { maxLength: 3 },
      ),
      taken: fc.array(relayed, { maxLength: 3 }),
      u: unknown,
    });
    const fields = RelayResponseSchema.field;
    fc.assert(
      fc.property(response, (r) => {
        const init = {
          messages: r.messages.map((m) => message(fields.messages.message as never, m, m.u)),
          ends: r.ends.map((e) =>
            message(
              fields.ends.message as never,
              {
                ...e,
                status:
                  e.status &&
                  message(
                    SessionResponseSchema.field.status.message as never,
                    e.status,
                    e.status.u,
                  ),
              },
              e.u,
            ),
          ),
          taken: r.taken.map((t) => message(fields.taken.message as never, t, t.u)),
        };
        const bytes = toBinary(RelayResponseSchema, message(RelayResponseSchema, init, r.u));
        const want = fromBinary(RelayResponseSchema, bytes);
        const got = { messages: [] as unknown[], ends: [] as unknown[], taken: [] as unknown[] };
        readRelayResponse(bytes, {
          message: (child, session, m) =>
            got.messages.push({ child, session, message: Buffer.from(m) }),
          end: (child, session, code, details) => got.ends.push({ child, session, code, details }),
          taken: (child, session) => got.taken.push({ child, session }),
        });
        expect(got).toEqual({
          messages: want.messages.map((m) => ({
            child: m.child,
            session: m.session,
            message: Buffer.from(m.message),
          })),
          ends: want.ends.map((e) => ({
            child: e.child,
            session: e.session,
            code: e.status?.code ?? 0,
            details: e.status?.message ?? "",
          })),
          taken: want.taken.map((t) => ({ child: t.child, session: t.session })),
        });
      }),
      RUNS,
    );
  });

  test("ExecuteResponse", () => {
    const response = fc.record({
      outputSpecs: fc.option(specsPayload, { nil: undefined }),
      outputs: fc.array(fc.record({ data: fc.uint8Array({ maxLength: 20 }), u: unknown }), {
        maxLength: 4,
      }),
      u: unknown,
    });
    fc.assert(
      fc.property(response, (r) => {
        const outputs = r.outputs.map((o) =>
          message(ExecuteResponseSchema.field.outputs.message as never, { data: o.data }, o.u),
        );
        const bytes = toBinary(
          ExecuteResponseSchema,
          message(ExecuteResponseSchema, { outputSpecs: r.outputSpecs, outputs }, r.u),
        );
        const want = fromBinary(ExecuteResponseSchema, bytes);
        const got = readExecuteResponse(bytes);
        expect(got.outputs.map((d) => Buffer.from(d))).toEqual(
          want.outputs.map((o) => Buffer.from(o.data)),
        );
        expectSameSpecs(got.outputSpecs, want.outputSpecs);
      }),
      RUNS,
    );
  });
});

/** A shard of a float32 array of `shape`: its index and bytes' layout, and the global bytes. */
const shard = fc.array(fc.integer({ min: 1, max: 5 }), { maxLength: 3 }).chain((shape) => {
  const size = shape.reduce((a, b) => a * b, 1) * 4;
  const bounds = shape.map((n) =>
    fc
      .integer({ min: 0, max: n - 1 })
      .chain((a) => fc.tuple(fc.constant(a), fc.integer({ min: a + 1, max: n }))),
  );
  return fc
    .record({
      bounds: fc.tuple(...bounds),
      global: fc.uint8Array({ minLength: size, maxLength: size }),
    })
    .map(({ bounds, global }) => {
      const index = { start: bounds.map((b) => b[0]), stop: bounds.map((b) => b[1]) };
      return { shape, index, layout: new ShardLayout(shape, index, 4), global };
    });
});

describe("the generated decoder reads what the writers write", () => {
  test("LoadProgramRequest: the version, and the program's bytes as they were given", () => {
    const request = fc.record({
      version: u32,
      functionName: fc.string({ maxLength: 12 }),
      u: unknown,
    });
    fc.assert(
      fc.property(request, (r) => {
        const program = message(ProgramPayloadSchema, { version: r.version }, r.u);
        const bytes = loadRequest(r.version, toBinary(ProgramPayloadSchema, program));
        const got = fromBinary(LoadProgramRequestSchema, bytes);
        expect(got.version).toBe(r.version);
        expect(got.program && equals(ProgramPayloadSchema, got.program, program)).toBe(true);
        expect(got.program?.$unknown ?? []).toEqual(r.u);
      }),
      RUNS,
    );
  });

  test("ExecuteShardedRequest: a chunk (its data read in place), and the end", () => {
    fc.assert(
      fc.property(shard, u32, fc.boolean(), fc.nat(), fc.nat(), (s, leaf, named, a, b) => {
        const offset = a % (s.layout.byteLength + 1);
        const length = b % (s.layout.byteLength - offset + 1);
        const index = named ? s.index : undefined;
        const bytes = chunkMessage(leaf, index, s.layout, s.global, offset, length);
        const part = fromBinary(ExecuteShardedRequestSchema, bytes).part;
        expect(part.case).toBe("chunk");
        if (part.case !== "chunk") return;
        expect(known(part.value)).toEqual({
          leaf,
          index: index && { start: index.start.map(BigInt), stop: index.stop.map(BigInt) },
          offset: BigInt(offset),
          data: Buffer.from(s.layout.gather(s.global, offset, length)),
          last: offset + length === s.layout.byteLength,
        });
        expect(part.value.$unknown).toBeUndefined();
      }),
      RUNS,
    );
    expect(fromBinary(ExecuteShardedRequestSchema, END_MESSAGE).part).toEqual({
      case: "end",
      value: true,
    });
  });

  test("SessionRequest: a call from its template, and a cancel", () => {
    const call = fc.record({
      id: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      version: u32,
      digest: fc.uint8Array({ maxLength: 32 }),
      shards: fc.array(shard, { maxLength: 3 }),
      timeoutMs: u53,
      jobCallId: fc.string({ maxLength: 24 }),
    });
    fc.assert(
      fc.property(call, (c) => {
        const start = create(ExecuteStartSchema, {
          version: c.version,
          handle: { digest: c.digest },
        });
        const inputs = c.shards.map((s, leaf) => ({ leaf, index: s.index, layout: s.layout }));
        const template = new SessionCallTemplate(toBinary(ExecuteStartSchema, start), inputs);
        const globals = c.shards.map((s) => s.global);
        const bytes = template.message(c.id, globals, callTail(c.timeoutMs, c.jobCallId));
        const part = fromBinary(SessionRequestSchema, bytes).part;
        expect(part.case).toBe("call");
        const got = part.value as SessionCall;
        expect([got.id, got.timeoutMs, got.jobCallId]).toEqual([
          BigInt(c.id),
          BigInt(c.timeoutMs),
          c.jobCallId,
        ]);
        expect(got.start && equals(ExecuteStartSchema, got.start, start)).toBe(true);
        expect(got.inputs.map(known)).toEqual(
          c.shards.map((s, leaf) => ({
            leaf,
            index: { start: s.index.start.map(BigInt), stop: s.index.stop.map(BigInt) },
            offset: 0n,
            data: Buffer.from(s.layout.gather(s.global, 0, s.layout.byteLength)),
            last: true,
          })),
        );
        const cancel = fromBinary(SessionRequestSchema, cancelMessage(c.id)).part;
        expect(cancel).toEqual({ case: "cancel", value: BigInt(c.id) });
      }),
      RUNS,
    );
  });

  test("RelayRequest: the children, then messages batched into one request", () => {
    const request = fc.record({
      children: fc.array(fc.string({ maxLength: 20 }), { maxLength: 4 }),
      messages: fc.array(
        fc.record({ child: u32, session: u32, message: fc.uint8Array({ maxLength: 20 }) }),
        { maxLength: 4 },
      ),
    });
    fc.assert(
      fc.property(request, (r) => {
        const first = fromBinary(RelayRequestSchema, childrenMessage(r.children));
        expect(first.children.map((c) => [c.child, c.target])).toEqual(
          r.children.map((t, i) => [i, t]),
        );
        const batch = new BinaryWriter();
        for (const m of r.messages) addRelayedMessage(batch, m.child, m.session, m.message);
        const got = fromBinary(RelayRequestSchema, batch.finish());
        expect(
          got.messages.map((m) => ({
            child: m.child,
            session: m.session,
            message: Buffer.from(m.message),
          })),
        ).toEqual(r.messages.map((m) => ({ ...m, message: Buffer.from(m.message) })));
      }),
      RUNS,
    );
  });
});
