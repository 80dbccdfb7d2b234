import type { WorkerClient } from "../client/client";
import type { MemberTransport, TransportKind, TransportOptions } from "./member-transport";
import { relays } from "./relays";
import { sessions } from "./sessions";
import { streams } from "./streams";

export type {
  MemberCalls,
  MemberTransport,
  TransportKind,
  TransportName,
  TransportOptions,
} from "./member-transport";
export { RELAY_FROM } from "./relays";
export { StreamsTransport } from "./streams";

/** The registry: every kind of transport, the one a group prefers first. */
export const TRANSPORT_KINDS: readonly TransportKind[] = [relays, sessions, streams];

/**
 * The transport a group's calls take: the first kind of the registry that opens over every
 * member (streams always do).
 */
export async function chooseTransport(
  clients: readonly WorkerClient[],
  version: number,
  options: TransportOptions,
  deadlineMs: number,
): Promise<MemberTransport> {
  for (const kind of TRANSPORT_KINDS) {
    const transport = await kind.open(clients, version, options, deadlineMs);
    if (transport !== undefined) return transport;
  }
  throw new Error("no transport opened: streams always do");
}
