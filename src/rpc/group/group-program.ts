import { ExecuteStart } from "../../../gen/ts/colocated/v1/service";
import { decodeSpecs } from "../../decode";
import { DecodeError } from "../../errors";
import { deviceIdsOf } from "../../model/device-list";
import type { Program, Specs } from "../../model/program";
import { type ShardIndex, ShardIndexError } from "../../shard-indices";
import { type SentProgram, sentProgram } from "../client/program-handles";
import { SessionCallTemplate } from "../messages/session-request";
import { startMessage } from "../messages/sharded-request";
import { elementByteLength } from "../sharded/array-bytes";
import { ShardLayout } from "../sharded/shard-layout";
import { shardedBytes } from "../sharded/sharded-bytes";
import { type OutputLeaf, outputLeaves } from "../sharded/sharded-outputs";
import { type MemberShards, planShards } from "./group-shards";

/** The job as a plan needs it: how many members, and which member holds each device. */
export interface GroupLayout {
  members: number;
  /** A device id to its member's position in the group. */
  memberOf: ReadonlyMap<number, number>;
}

/** One distinct output specs: decoded once, and each member's part of each output. */
export interface GroupOutputs {
  /** The SpecsPayload bytes, the group's own copy. */
  payload: Uint8Array;
  specs: Specs;
  /** Of each member, each output as its stream receives it. */
  byMember: OutputLeaf[][];
}

/**
 * What a WorkerGroup works out once for a program and keeps for every later call of it, so
 * that a call costs each member only its own stream: the program lowered and encoded once for
 * every member (sentProgram), each member's input shards and their bytes (found in one pass
 * over each input's shards, not one per member), the ExecuteStart message of each handle the
 * members gave, and the output specs decoded once, with each member's shards of each output.
 */
export class GroupProgram {
  readonly sent: SentProgram;
  /** Of each member, of each input leaf, the shards it is sent. */
  readonly inputs: MemberShards;
  /** Of each member, the input bytes its call holds (its client's queue counts them). */
  readonly inputBytes: number[];
  /** The most input bytes any member is sent. */
  readonly maxInputBytes: number;
  private readonly firstDevice: number;
  private readonly starts = new Map<string, Uint8Array>();
  /** Of each handle, its ExecuteStart (one for every member) and each member's session call. */
  private readonly sessionCalls = new Map<
    string,
    { start: Uint8Array; templates: SessionCallTemplate[] }
  >();
  private outputs: GroupOutputs | undefined;

  constructor(
    readonly program: Program,
    private readonly version: number,
    private readonly layout: GroupLayout,
  ) {
    this.sent = sentProgram(program, version);
    this.firstDevice = deviceIdsOf(program.devices)[0];
    const { members, memberOf } = layout;
    const leaves = program.inputs.leaves;
    this.inputs = planShards(leaves, memberOf, members, this.firstDevice);
    this.inputBytes = this.inputs.map((shards) => shardedBytes(leaves, (_, leaf) => shards[leaf]));
    this.maxInputBytes = Math.max(0, ...this.inputBytes);
  }

  /**
   * Member `i`'s session call naming the program by `digest`, written once per handle and
   * member (SessionCallTemplate): each later call only fills in its input data.
   */
  sessionCall(i: number, digest: Uint8Array): SessionCallTemplate {
    const key = keyOf(digest);
    let calls = this.sessionCalls.get(key);
    if (calls === undefined) {
      const start = ExecuteStart.encode({ version: this.version, handle: { digest } }).finish();
      calls = { start, templates: [] };
      this.sessionCalls.set(key, calls);
    }
    let template = calls.templates[i];
    if (template === undefined) {
      const leaves = this.program.inputs.leaves;
      const inputs = this.inputs[i].flatMap((indices, leaf) => {
        const item = elementByteLength(leaves[leaf]) as number;
        const layout = (index: ShardIndex) => new ShardLayout(leaves[leaf].shape, index, item);
        return indices.map((index) => ({ leaf, index, layout: layout(index) }));
      });
      template = new SessionCallTemplate(calls.start, inputs);
      calls.templates[i] = template;
    }
    return template;
  }

  /**
   * The ExecuteStart message naming the program by `digest`, encoded once per handle: every
   * member of a job gives the same one (the SHA-256 of the program's bytes), so once in all.
   */
  start(digest: Uint8Array): Uint8Array {
    const key = keyOf(digest);
    let start = this.starts.get(key);
    if (start === undefined) {
      start = startMessage({ version: this.version, handle: { digest } });
      this.starts.set(key, start);
    }
    return start;
  }

  /**
   * The outputs of these output specs (a SpecsPayload, as a member sent it): the last ones
   * again when the bytes are the same (a program answers with the same specs every call),
   * else decoded, and each member's shards of each output found once. Throws DecodeError.
   */
  outputsOf(payload: Uint8Array, version: number): GroupOutputs {
    const known = this.outputs;
    if (known !== undefined && Buffer.compare(payload, known.payload) === 0) return known;
    const copy = payload.slice();
    const specs = decodeSpecs(copy, { maxMinorVersion: version });
    const { members, memberOf } = this.layout;
    const byLeaf = specs.leaves.map((spec, i) => {
      try {
        return planShards([spec], memberOf, members, this.firstDevice);
      } catch (error) {
        if (!(error instanceof ShardIndexError)) throw error;
        const detail = `its shards cannot be known: ${error.message}`;
        throw new DecodeError(`outputs[${i}]`, "invalid-value", detail);
      }
    });
    const byMember = Array.from({ length: members }, (_, m) =>
      outputLeaves(specs.leaves, (_spec, leaf) => byLeaf[leaf][m][0]),
    );
    this.outputs = { payload: copy, specs, byMember };
    return this.outputs;
  }
}

/** A handle as a map key. */
function keyOf(digest: Uint8Array): string {
  return Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength).toString("latin1");
}
