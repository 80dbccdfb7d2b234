import { createConnection, createServer, type Server, type Socket } from "node:net";

/** A TCP proxy listening on a free loopback port: its address, and its server to close. */
export interface TcpProxy {
  address: string;
  server: Server;
}

/**
 * Listens on a free 127.0.0.1 port and connects each client that comes to `target` (host:port);
 * `join` forwards between the two sockets, as plainly or as badly as its proxy wants.
 */
export async function tcpProxy(
  target: string,
  join: (client: Socket, upstream: Socket) => void,
): Promise<TcpProxy> {
  const at = target.lastIndexOf(":");
  const [host, port] = [target.slice(0, at), Number(target.slice(at + 1))];
  const server = createServer((client) => join(client, createConnection(port, host)));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the proxy has no port");
  return { address: `127.0.0.1:${address.port}`, server };
}

/** Forwards both ways as they are; an error on either side ends both. */
export function pipeBothWays(client: Socket, upstream: Socket): void {
  client.pipe(upstream).pipe(client);
  client.on("error", () => upstream.destroy());
  upstream.on("error", () => client.destroy());
}
