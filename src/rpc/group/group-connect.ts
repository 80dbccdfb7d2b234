import { type ConnectOptions, WorkerClient } from "../client/client";
import { formatRange } from "../client/negotiate";
import { VersionMismatchError } from "../errors";

/**
 * Connects to every target and settles on one version all of them accept: the lowest of the
 * versions each would agree to alone (IFRT Proxy's rule, per worker), which must lie in every
 * worker's range, or a VersionMismatchError names them. A worker that agreed on a newer
 * version alone is connected again at that one. On any failure, every channel is closed.
 */
export async function connectAll(
  targets: readonly string[],
  options: ConnectOptions,
): Promise<WorkerClient[]> {
  if (targets.length === 0) throw new RangeError("a worker group needs at least one worker");
  let clients = await allOrClose(targets.map((t) => WorkerClient.connect(t, options)));
  const version = Math.min(...clients.map((c) => c.version));
  const lowest = clients.find((c) => c.version === version) as WorkerClient;
  const refusing = clients.find((c) => version < c.serverRange.minVersion);
  if (refusing) {
    for (const c of clients) c.close();
    throw new VersionMismatchError(
      `no colocated.v1 version that every worker accepts: ${lowest.target} supports ${formatRange(lowest.serverRange)}, ${refusing.target} ${formatRange(refusing.serverRange)}`,
    );
  }
  if (clients.some((c) => c.version !== version)) {
    const again = clients.map((c) => {
      if (c.version === version) return Promise.resolve(c);
      c.close();
      return WorkerClient.connect(c.target, { ...options, maxVersion: version });
    });
    clients = await allOrClose(again);
  }
  return clients;
}

/** Every promise's client, or the first failure once every other client is closed. */
async function allOrClose(pending: Promise<WorkerClient>[]): Promise<WorkerClient[]> {
  const settled = await Promise.allSettled(pending);
  const failed = settled.find((s) => s.status === "rejected");
  if (failed === undefined) {
    return settled.map((s) => (s as PromiseFulfilledResult<WorkerClient>).value);
  }
  for (const s of settled) if (s.status === "fulfilled") s.value.close();
  throw failed.reason;
}
