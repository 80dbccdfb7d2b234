import { DecodeError } from "../../errors";
import type { ShardedProgress, ShardedResult } from "../sharded/sharded-call";
import type { ShardScope, StreamOutputs } from "../sharded/sharded-outputs";
import { describeMember, type GroupMember } from "./group-member";
import type { GroupOutputs, GroupProgram } from "./group-program";

/**
 * One call of a WorkerGroup, shared by its members' streams: the output specs they must all
 * send (the first to arrive is decoded, or found decoded, and each other's bytes compared
 * with it), the output buffers every member's shards land in, in place (one per output, or
 * the caller's `into`), and the bytes moved over all members.
 */
export class GroupCall {
  private outputs: GroupOutputs | undefined;
  /** The member whose output specs came first. */
  private first = 0;
  private readonly buffers: Uint8Array[] = [];
  /** Of each member, its bytes moved so far: kept once progress is reported. */
  private moved: ShardedProgress[] | undefined;
  private readonly total: ShardedProgress = { sentBytes: 0, receivedBytes: 0 };

  constructor(
    private readonly program: GroupProgram,
    private readonly members: readonly GroupMember[],
  ) {}

  /** Member `i`'s part: the shards it is sent, its shards of the outputs, the shared buffers. */
  scope(i: number): ShardScope {
    const inputs = this.program.inputs[i];
    return {
      inputShards: (_spec, leaf) => inputs[leaf],
      outputs: (payload, version) => this.outputsOf(i, payload, version),
      buffer: (leaf, _bytes, make) => {
        this.buffers[leaf] ??= make();
        return this.buffers[leaf];
      },
    };
  }

  /**
   * What the call returned, once every member's answer has ended: the output specs and the
   * buffers every member's shards landed in.
   */
  result(): ShardedResult {
    const outputs = this.outputs;
    if (outputs === undefined) throw new Error("the group call has no answer yet");
    const { treedef, leaves } = outputs.specs;
    return {
      outputs: { treedef, leaves: [...leaves] },
      data: [...this.buffers],
      outputSpecsPayload: outputs.payload,
    };
  }

  /** Member `i`'s bytes moved so far: the sum over every member, kept as a running total. */
  progress(i: number, progress: ShardedProgress): ShardedProgress {
    this.moved ??= this.members.map(() => ({ sentBytes: 0, receivedBytes: 0 }));
    const was = this.moved[i];
    this.total.sentBytes += progress.sentBytes - was.sentBytes;
    this.total.receivedBytes += progress.receivedBytes - was.receivedBytes;
    this.moved[i] = { ...progress };
    return { ...this.total };
  }

  /**
   * Member `i`'s output specs: every member must send the same ones, as one SPMD program
   * does (a member replicates an output its function made on its own process over the whole
   * job, so even those agree); specs that differ mean the members did not run the same thing.
   */
  private outputsOf(i: number, payload: Uint8Array, version: number): StreamOutputs {
    if (this.outputs === undefined) {
      this.outputs = this.program.outputsOf(payload, version);
      this.first = i;
    } else if (Buffer.compare(payload, this.outputs.payload) !== 0) {
      const detail = `the members disagree on the output specs (${describeMember(this.members[i])} against ${describeMember(this.members[this.first])}): they did not run the same program on the same devices`;
      throw new DecodeError("output_specs", "invalid-value", detail);
    }
    const { specs, payload: copy, byMember } = this.outputs;
    return { specs, payload: copy, leaves: byMember[i] };
  }
}
