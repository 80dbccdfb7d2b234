import { createConnection, createServer, type Server } from "node:net";

/** Bytes that crossed a proxy: up from the client to the server, down back. */
export interface Counts {
  up: number;
  down: number;
}

/** A TCP proxy to `target` on a free port, counting the bytes it forwards; close() stops it. */
export async function countingProxy(
  target: string,
): Promise<{ address: string; counts: Counts; close: () => void }> {
  const at = target.lastIndexOf(":");
  const [host, port] = [target.slice(0, at), Number(target.slice(at + 1))];
  const counts = { up: 0, down: 0 };
  const proxy: Server = createServer((client) => {
    const upstream = createConnection(port, host);
    client.on("data", (chunk) => {
      counts.up += chunk.length;
    });
    upstream.on("data", (chunk) => {
      counts.down += chunk.length;
    });
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const address = proxy.address();
  if (address === null || typeof address === "string") throw new Error("the proxy has no port");
  return { address: `127.0.0.1:${address.port}`, counts, close: () => proxy.close() };
}
