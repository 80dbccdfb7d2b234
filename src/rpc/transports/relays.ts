import type { TransportKind } from "./member-transport";
import type { RelayedSession, RelayStream } from "./relay";
import { SessionsTransport } from "./sessions";

/**
 * The fewest members relayed by default, and the fewest a relay carries (`relayFanout`): a
 * relay's stream costs the controller about what a member's session does, so a relay pays
 * for itself when it carries many.
 */
export const RELAY_FROM = 16;

/**
 * From RELAY_FROM members up, ⌈√N⌉ members a relay (as many relays as members a relay: no
 * relaying member carries more than the controller does), and at least RELAY_FROM.
 */
export function defaultFanout(members: number): number {
  return members >= RELAY_FROM ? Math.max(RELAY_FROM, Math.ceil(Math.sqrt(members))) : 0;
}

/**
 * Each member's session carried by a relay: the first of each run of `relayFanout` members
 * relays for the run. None when the fan-out is 0 or 1, sessions are off, a member serves no
 * relays, a relaying worker refuses the stream, or a relay cannot reach a member the
 * controller reached (sessions go direct then).
 */
export const relays: TransportKind = {
  name: "relays",
  async open(clients, version, options, deadlineMs) {
    const fanout = options.relayFanout ?? defaultFanout(clients.length);
    if (options.sessions === false || fanout <= 1) return undefined;
    if (!clients.every((c) => c.servesSessions && c.servesRelays)) return undefined;
    const streams: RelayStream[] = [];
    for (let first = 0; first < clients.length; first += fanout) {
      const run = clients.slice(first, first + fanout).map((c) => c.target);
      streams.push(clients[first].openRelay(run));
    }
    const taken = await Promise.allSettled(streams.map((r) => r.whenTaken(deadlineMs)));
    const failed = taken.find((t) => t.status === "rejected");
    if (failed === undefined) {
      const carried = streams.flatMap((r) => r.sessions);
      return new SessionsTransport("relays", clients, version, carried, streams.length);
    }
    for (const r of streams) r.close();
    // A relaying worker, or a member, that refused, or a member out of its relay's reach (the
    // controller reached it at connect): a session to each member is tried instead.
    const direct = (s: RelayedSession) => s.refused || s.unreached;
    if (streams.some((r) => r.refused || r.sessions.some(direct))) return undefined;
    throw failed.reason;
  },
};
