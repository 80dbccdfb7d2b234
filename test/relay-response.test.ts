import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { status } from "@grpc/grpc-js";
import { RelayResponse } from "../gen/ts/colocated/v1/service";
import { DecodeError } from "../src/errors";
import { readRelayResponse } from "../src/rpc/messages/relay-response";

// How the controller reads a relay's answers: each child's SessionResponse bytes and the ends
// of its sessions, in the order they came, unknown fields skipped, bad bytes named.

type Seen = [string, number, number, string | number];

function read(bytes: Uint8Array): Seen[] {
  const seen: Seen[] = [];
  readRelayResponse(bytes, {
    message: (child, number, message) => seen.push(["message", child, number, message.length]),
    end: (child, number, code, details) => seen.push(["end", child, number, `${code} ${details}`]),
    taken: (child, number) => seen.push(["taken", child, number, ""]),
  });
  return seen;
}

test("messages, ends and sessions taken, each kind in the order it came; an end without a status OK", () => {
  const bytes = RelayResponse.encode({
    taken: [
      { child: 5, session: 0 },
      { child: 2, session: 3 },
    ],
    messages: [
      { child: 3, session: 0, message: new Uint8Array(5) },
      { child: 0, session: 2, message: new Uint8Array(1) },
    ],
    ends: [
      { child: 7, session: 1, status: { code: status.UNAVAILABLE, message: "gone" } },
      { child: 4, session: 0, status: undefined },
    ],
  }).finish();
  expect(read(bytes)).toEqual([
    ["message", 3, 0, 5],
    ["message", 0, 2, 1],
    ["end", 7, 1, `${status.UNAVAILABLE} gone`],
    ["end", 4, 0, "0 "],
    ["taken", 5, 0, ""],
    ["taken", 2, 3, ""],
  ]);
});

test("a field of a newer schema is skipped", () => {
  const known = RelayResponse.encode({
    messages: [{ child: 1, session: 0, message: new Uint8Array(2) }],
    ends: [],
    taken: [],
  }).finish();
  const newer = new BinaryWriter()
    .raw(known)
    .uint32((15 << 3) | 2)
    .bytes(new Uint8Array(3));
  expect(read(newer.finish())).toEqual([["message", 1, 0, 2]]);
});

test("bytes that are not a RelayResponse are a DecodeError naming the response", () => {
  const whole = RelayResponse.encode({
    messages: [{ child: 1, session: 0, message: new Uint8Array(40) }],
    ends: [],
    taken: [],
  }).finish();
  const error = (() => {
    try {
      read(whole.subarray(0, 20));
    } catch (e) {
      return e;
    }
  })();
  expect(error).toBeInstanceOf(DecodeError);
  expect((error as DecodeError).path).toBe("response");
  expect((error as DecodeError).code).toBe("malformed");
});
