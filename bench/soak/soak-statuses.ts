/**
 * The statuses a call may end with when the network breaks under it (part 3, the faulty proxy)
 * or the worker dies (part 2), and why each is expected. A status not listed here is a finding:
 * the soak's targets count it as undocumented.
 */

/** Why a status is an expected end of a call whose connection was cut or stalled. */
export const EXPECTED_FAULT_STATUSES: Record<string, string> = {
  UNAVAILABLE:
    'the connection was cut (closed or reset) under the call: grpc-js says "Connection dropped" or "read ECONNRESET"; or the call started while the channel had no connection ("No connection established"), which grpc-js reconnects by itself, with backoff',
  DEADLINE_EXCEEDED:
    "reads stalled (0–2 s each, and one connection carries every call, so stalls add up) until the call's deadline passed; grpc-js ends the call by its own timer",
  CANCELLED:
    'grpc-js reports "Call cancelled" when Node ends a stream with CANCEL as its connection drops before grpc-js has seen the drop (subchannel-call.js)',
  INTERNAL:
    'grpc-js reports a stream that ended without a gRPC status as "Received RST_STREAM with code 0 (Call ended without gRPC status)", and a write to a stream already ended as "Write error": both when a cut ends the connection in the middle of a call',
  NOT_FOUND:
    "(part 2) the worker restarted again between the client's reload of a program and its call: the one retry after NOT_FOUND met a worker that had lost the program too",
};

/** Statuses expected when the worker is killed (part 2). */
export const EXPECTED_RESTART_STATUSES = ["UNAVAILABLE", "DEADLINE_EXCEEDED", "NOT_FOUND"];

/** Statuses expected through the faulty proxy (part 3). */
export const EXPECTED_PROXY_STATUSES = [
  "UNAVAILABLE",
  "DEADLINE_EXCEEDED",
  "CANCELLED",
  "INTERNAL",
];
