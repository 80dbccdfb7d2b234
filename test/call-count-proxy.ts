import { pipeBothWays, tcpProxy } from "./support/tcp-proxy";

/**
 * gRPC calls (attempts, once gRPC retries) that crossed a proxy, read from the HTTP/2 frames:
 * streams the client opened (its HEADERS frames) and streams the worker ended (its HEADERS
 * frames that end the stream, which a refusal and a normal answer both send once).
 */
export interface CallCounts {
  opened: number;
  ended: number;
  /** The most calls in flight through the proxy at once (opened and not yet ended). */
  mostInFlight: number;
}

/** The client's connection preface, before its first frame. */
const PREFACE_BYTES = 24;
const FRAME_HEADER_BYTES = 9;
const HEADERS = 0x1;
const END_STREAM = 0x1;

/** A TCP proxy to `target` on a free port that counts the calls through it; close() stops it. */
export async function callCountProxy(target: string): Promise<{
  address: string;
  counts: CallCounts;
  whenEnded(count: number): Promise<void>;
  close(): void;
}> {
  const counts: CallCounts = { opened: 0, ended: 0, mostInFlight: 0 };
  const waiting: { count: number; resolve: () => void }[] = [];
  const opened = () => {
    counts.opened += 1;
    counts.mostInFlight = Math.max(counts.mostInFlight, counts.opened - counts.ended);
  };
  const ended = () => {
    counts.ended += 1;
    for (const w of waiting.filter((w) => counts.ended >= w.count)) {
      waiting.splice(waiting.indexOf(w), 1);
      w.resolve();
    }
  };
  const { address, server } = await tcpProxy(target, (client, upstream) => {
    client.on("data", frames(PREFACE_BYTES, opened));
    upstream.on(
      "data",
      frames(0, (flags) => {
        if (flags & END_STREAM) ended();
      }),
    );
    pipeBothWays(client, upstream);
  });
  return {
    address,
    counts,
    whenEnded: (count) =>
      counts.ended >= count
        ? Promise.resolve()
        : new Promise((resolve) => waiting.push({ count, resolve })),
    close: () => server.close(),
  };
}

/** Reads one direction of an HTTP/2 connection as it passes, calling `onHeaders` per HEADERS frame. */
function frames(skip: number, onHeaders: (flags: number) => void): (chunk: Buffer) => void {
  let rest: Buffer = Buffer.alloc(0); // a frame header cut by the end of a chunk
  let skipping = skip; // bytes still to pass over: the preface, or a frame's payload
  return (chunk) => {
    const data = rest.length > 0 ? Buffer.concat([rest, chunk]) : chunk;
    let at = 0;
    for (;;) {
      const passed = Math.min(skipping, data.length - at);
      at += passed;
      skipping -= passed;
      if (skipping > 0 || data.length - at < FRAME_HEADER_BYTES) break;
      if (data[at + 3] === HEADERS) onHeaders(data[at + 4]);
      skipping = data.readUIntBE(at, 3);
      at += FRAME_HEADER_BYTES;
    }
    rest = data.subarray(at);
  };
}
