import { Client, credentials, type ServiceError, status } from "@grpc/grpc-js";
import { mutate } from "./mutate";
import type { Prng } from "./prng";
import type { RecordedCall } from "./rpc-proxy";

/** A call to send as it is: its method, its messages, and whether to cancel it after them. */
export interface Replay {
  path: string;
  requestStream: boolean;
  requests: Buffer[];
  /** Cancel the stream once its messages are written, instead of half-closing it. */
  abandon: boolean;
  /** What was done to the recorded call, for the report. */
  mutation: string;
}

/** How a replayed call ended: its status code, and the messages the worker sent back. */
export interface ReplayEnd {
  code: status;
  details: string;
  responses: number;
  /** The last message the worker sent, if any. */
  last?: Buffer;
}

const asIs = (b: Buffer) => b;

/**
 * A recorded call changed as a hostile or broken client would: one message's bytes mutated
 * (bit flips, truncation, inserted bytes, ...: fuzz/mutate.ts), a message dropped, repeated or
 * moved, a mutated message added, or the stream abandoned after some of its messages.
 */
export function mutateCall(call: RecordedCall, others: readonly Buffer[], rng: Prng): Replay {
  const requests = [...call.requests];
  const base = { path: call.path, requestStream: call.requestStream, abandon: false };
  const bytesOf = (i: number) => Buffer.from(mutate(requests[i], others, rng));
  const op = call.requestStream && requests.length > 0 ? rng.below(6) : 0;
  const i = rng.below(Math.max(1, requests.length));
  switch (op) {
    case 0:
      if (requests.length) requests[i] = bytesOf(i);
      return { ...base, requests, mutation: `message ${i} mutated` };
    case 1:
      requests.splice(i, 1);
      return { ...base, requests, mutation: `message ${i} dropped` };
    case 2:
      requests.splice(i, 0, requests[i]);
      return { ...base, requests, mutation: `message ${i} repeated` };
    case 3: {
      const j = rng.below(requests.length);
      [requests[i], requests[j]] = [requests[j], requests[i]];
      return { ...base, requests, mutation: `messages ${i} and ${j} swapped` };
    }
    case 4:
      requests.splice(i, 0, bytesOf(i));
      return { ...base, requests, mutation: `a mutated copy of message ${i} inserted` };
    default:
      // After at least one message: a stream cancelled before its first one is held by the
      // worker until its deadline (grpcio never sees that cancel; docs/performance-journal.md, wave 15).
      return {
        ...base,
        requests: requests.slice(0, i + 1),
        abandon: true,
        mutation: `abandoned after ${i + 1} messages`,
      };
  }
}

/** Sends raw messages to a worker, without the library's client. */
export class RawClient {
  private readonly client: Client;

  constructor(target: string) {
    this.client = new Client(target, credentials.createInsecure(), {
      "grpc.max_receive_message_length": -1,
      "grpc.max_send_message_length": -1,
    });
  }

  /** Sends the call's messages; resolves with how it ended, at its deadline at the latest. */
  send(replay: Replay, deadlineMs: number): Promise<ReplayEnd> {
    const deadline = Date.now() + deadlineMs;
    if (!replay.requestStream) {
      return new Promise((resolve) => {
        this.client.makeUnaryRequest(
          replay.path,
          asIs,
          asIs,
          replay.requests[0] ?? Buffer.alloc(0),
          { deadline },
          (error: ServiceError | null, response?: Buffer) =>
            resolve({
              code: error ? error.code : status.OK,
              details: error?.details ?? "",
              responses: error ? 0 : 1,
              last: response,
            }),
        );
      });
    }
    return new Promise((resolve) => {
      const call = this.client.makeBidiStreamRequest(replay.path, asIs, asIs, { deadline });
      let responses = 0;
      let last: Buffer | undefined;
      call.on("data", (b: Buffer) => {
        responses++;
        last = b;
      });
      call.on("error", () => {}); // the status below says it
      call.on("status", (s) => resolve({ code: s.code, details: s.details, responses, last }));
      for (const message of replay.requests) call.write(message);
      if (replay.abandon) call.cancel();
      else call.end();
    });
  }

  close(): void {
    this.client.close();
  }
}
