import http2 from "node:http2";
import type { Program } from "../../src";
import { deviceIdsOf } from "../../src/model/device-list";
import { sentProgram } from "../../src/rpc/client/program-handles";
import { planShards } from "../../src/rpc/group/group-shards";
import { chunkMessage, END_MESSAGE, startMessage } from "../../src/rpc/messages/sharded-request";
import { elementByteLength } from "../../src/rpc/sharded/array-bytes";
import { CALL_ID_KEY } from "../../src/rpc/sharded/call-id";
import { ShardLayout } from "../../src/rpc/sharded/shard-layout";
import { type CallCost, callCost } from "./group-timing";

/**
 * The transport's floor under a group call (the fixed-answer part's limit, as the load bench's
 * echo is the worker's): one bare HTTP/2 stream per member per call (node:http2, no gRPC
 * library), carrying the same request bytes as the group's and reading the same answers, but
 * nothing else: no deadline, no checks, no assembly, the answer's bytes only counted. What a
 * group call costs beyond it is grpc-js and the group.
 */

const PATH = "/colocated.v1.ColocatedWorkerService/ExecuteSharded";

/** gRPC's length-prefixed message. */
function framed(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length);
  out[0] = 0;
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/**
 * Times `calls` calls of `program` (already loaded on every member, as the group loaded it),
 * each one bare stream per member; the members' process index is their position.
 */
export async function measureFloor(
  targets: readonly string[],
  version: number,
  program: Program,
  inputs: readonly ArrayBufferView[],
  processOf: ReadonlyMap<number, number>,
  calls: number,
): Promise<CallCost> {
  const digest = Buffer.from(sentProgram(program, version).key, "hex");
  const start = framed(startMessage({ version, handle: { digest } }));
  const leaves = program.inputs.leaves;
  const first = deviceIdsOf(program.devices)[0];
  const shards = planShards(leaves, processOf, targets.length, first);
  const globals = inputs.map((a) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
  // Each member's request, as the group writes it, made once: the floor counts the transport.
  const requests = shards.map((mine) => {
    const parts = [start];
    leaves.forEach((spec, leaf) => {
      const item = elementByteLength(spec) as number;
      for (const index of mine[leaf]) {
        const layout = new ShardLayout(spec.shape, index, item);
        parts.push(framed(chunkMessage(leaf, index, layout, globals[leaf], 0, layout.byteLength)));
      }
    });
    parts.push(framed(END_MESSAGE));
    return Buffer.concat(parts);
  });
  const sessions = targets.map((t) => http2.connect(`http://${t}`));
  const stream = (i: number, id: string) =>
    new Promise<void>((resolve, reject) => {
      const request = sessions[i].request({
        ":method": "POST",
        ":path": PATH,
        "content-type": "application/grpc",
        te: "trailers",
        [CALL_ID_KEY]: id,
      });
      request.on("data", () => {});
      request.on("trailers", (t) => {
        if (t["grpc-status"] !== "0") reject(new Error(`grpc-status ${t["grpc-status"]}`));
      });
      request.on("end", resolve);
      request.on("error", reject);
      request.end(requests[i]);
    });
  let n = 0;
  try {
    const call = () => {
      const id = `floor-${n++}`;
      return Promise.all(targets.map((_, i) => stream(i, id)));
    };
    return await callCost(call, calls, calls); // as many to warm up as are timed
  } finally {
    for (const s of sessions) s.close();
  }
}
