import type { Socket } from "node:net";
import { seededRandom } from "../../test/support/seeded-random";
import { tcpProxy } from "../../test/support/tcp-proxy";
import { derivedSeed } from "./soak-random";

/**
 * A TCP proxy on 127.0.0.1 that breaks the connections it forwards, by a seeded plan: each
 * connection is cut (closed, or reset) after a random number of bytes, and each direction
 * stops reading for a random 0–maxStallMs now and then. Every random choice comes from
 * (seed, connection number, direction) and the bytes seen, so the same seed gives every
 * connection the same plan; only when the faults strike, in wall-clock time, differs.
 * (test/support/load-proxy.ts is the plain counting proxy of the load bench.)
 */

/** How often and how hard the proxy breaks things. */
export interface FaultPlan {
  seed: number;
  /**
   * A connection is cut after an exponential number of bytes of this mean, both directions
   * together: memoryless, so cuts keep coming however long a connection has lived.
   */
  meanBytesBeforeCut: number;
  /** Each direction stops reading after a uniform [0, 2 × this) bytes since its last stop. */
  meanBytesBetweenStalls: number;
  /** ... for a uniform [0, this) ms. */
  maxStallMs: number;
}

/** What the proxy did. */
export interface FaultCounts {
  connections: number;
  /** Connections it cut: closed (FIN), or reset (RST). */
  closed: number;
  reset: number;
  stalls: number;
  stalledMs: number;
  bytes: number;
}

/** A running proxy: where it listens, what it did, and how to stop it. */
export interface FaultyProxy {
  address: string;
  counts: FaultCounts;
  close(): Promise<void>;
}

const UP = 1;
const DOWN = 2;

/** Starts a proxy to `target` on a free loopback port that breaks connections by `plan`. */
export async function faultyProxy(target: string, plan: FaultPlan): Promise<FaultyProxy> {
  const counts: FaultCounts = {
    connections: 0,
    closed: 0,
    reset: 0,
    stalls: 0,
    stalledMs: 0,
    bytes: 0,
  };
  const open = new Set<Socket>();
  const { address, server } = await tcpProxy(target, (client, upstream) => {
    const number = counts.connections++;
    for (const s of [client, upstream]) {
      open.add(s);
      s.on("close", () => open.delete(s));
    }
    breakConnection(client, upstream, plan, number, counts);
  });
  return {
    address,
    counts,
    close: () =>
      new Promise((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Forwards both ways between `client` and `upstream`, breaking the connection by the plan. */
function breakConnection(
  client: Socket,
  upstream: Socket,
  plan: FaultPlan,
  number: number,
  counts: FaultCounts,
): void {
  const random = seededRandom(derivedSeed(plan.seed, number));
  const cutAfter = Math.floor(-Math.log(1 - random()) * plan.meanBytesBeforeCut);
  const reset = random() < 0.5;
  let passed = 0;
  let cutting = false; // the last bytes before the cut are on their way: nothing more passes
  let done = false;
  const fail = () => {
    done = true;
    client.destroy();
    upstream.destroy();
  };
  const cut = () => {
    if (done) return;
    done = true;
    if (reset) counts.reset++;
    else counts.closed++;
    for (const s of [client, upstream]) {
      if (reset) s.resetAndDestroy();
      else s.destroy();
    }
  };
  /** One direction: reads `from`, writes `to`, stalls and cuts by its own random stream. */
  const forward = (from: Socket, to: Socket, direction: number) => {
    const random = seededRandom(derivedSeed(plan.seed, number, direction));
    const gap = () => Math.floor(random() * 2 * plan.meanBytesBetweenStalls);
    let bytes = 0;
    let nextStall = gap();
    // Reading resumes only when neither a stall nor a full write buffer holds it.
    let stalled = false;
    let blocked = false;
    const resume = () => {
      if (!stalled && !blocked && !done) from.resume();
    };
    const write = (chunk: Buffer, then?: () => void) => {
      if (done) return;
      counts.bytes += chunk.length;
      if (!to.write(chunk, then)) {
        blocked = true;
        from.pause();
        to.once("drain", () => {
          blocked = false;
          resume();
        });
      }
    };
    from.on("data", (chunk: Buffer) => {
      if (done || cutting) return;
      const room = cutAfter - passed;
      if (chunk.length >= room) {
        // The bytes up to the cut go through first: the peer may get half a frame.
        from.pause();
        cutting = true;
        passed = cutAfter;
        if (room > 0) write(chunk.subarray(0, room), cut);
        else cut();
        return;
      }
      passed += chunk.length;
      bytes += chunk.length;
      if (bytes < nextStall) return write(chunk);
      nextStall = bytes + gap();
      const ms = random() * plan.maxStallMs;
      counts.stalls++;
      counts.stalledMs += ms;
      stalled = true;
      from.pause();
      setTimeout(() => {
        stalled = false;
        write(chunk);
        resume();
      }, ms);
    });
    from.on("end", () => to.end());
  };
  forward(client, upstream, UP);
  forward(upstream, client, DOWN);
  client.on("error", fail);
  upstream.on("error", fail);
  // A side that closes lets the other finish writing what it has, then close too.
  client.on("close", () => upstream.end());
  upstream.on("close", () => client.end());
}
