import { pipeBothWays, tcpProxy } from "./tcp-proxy";

/** Bytes that crossed a proxy: up from the client to the server, down back. */
export interface Counts {
  up: number;
  down: number;
}

/** A TCP proxy to `target` on a free port, counting the bytes it forwards; close() stops it. */
export async function countingProxy(
  target: string,
): Promise<{ address: string; counts: Counts; close: () => void }> {
  const counts = { up: 0, down: 0 };
  const { address, server } = await tcpProxy(target, (client, upstream) => {
    client.on("data", (chunk) => {
      counts.up += chunk.length;
    });
    upstream.on("data", (chunk) => {
      counts.down += chunk.length;
    });
    pipeBothWays(client, upstream);
  });
  return { address, counts, close: () => server.close() };
}
