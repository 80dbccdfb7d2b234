import { status } from "@grpc/grpc-js";
import { SCHEMA_MINOR_VERSION, ShapeDtypeStruct } from "../src";
import {
  arrayByteLength,
  DEFAULT_VERSION_RANGE,
  negotiateVersion,
  VersionMismatchError,
  WorkerClient,
} from "../src/rpc";

const range = (minVersion: number, maxVersion: number) => ({ minVersion, maxVersion });

describe("negotiateVersion", () => {
  test("this library offers every version it can target, 1.0 to the one it writes", () => {
    expect(DEFAULT_VERSION_RANGE).toEqual(range(0, SCHEMA_MINOR_VERSION));
  });

  test("takes the lower of the two maxima", () => {
    expect(negotiateVersion(range(0, 0), range(0, 0))).toBe(0);
    expect(negotiateVersion(range(0, 3), range(1, 2))).toBe(2);
    expect(negotiateVersion(range(1, 2), range(0, 3))).toBe(2);
  });

  test("a client below the server's minimum gets an error naming both ranges", () => {
    expect(() => negotiateVersion(range(0, 1), range(2, 4))).toThrow(
      new VersionMismatchError(
        "no common colocated.v1 version: client supports 1.0–1.1, server 1.2–1.4",
      ),
    );
  });

  test("a server below the client's minimum gets an error naming both ranges", () => {
    let error: unknown;
    try {
      negotiateVersion(range(2, 4), range(0, 1));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(VersionMismatchError);
    expect((error as VersionMismatchError).code).toBe(status.FAILED_PRECONDITION);
    expect((error as Error).message).toBe(
      "no common colocated.v1 version: client supports 1.2–1.4, server 1.0–1.1",
    );
  });

  test("an empty or fractional range is a RangeError", () => {
    expect(() => negotiateVersion(range(3, 1), range(0, 5))).toThrow(RangeError);
    expect(() => negotiateVersion(range(0, 1), range(0.5, 1))).toThrow(/server's version range/);
  });
});

describe("client arguments", () => {
  test("connect refuses a bad deadline or range before it dials", async () => {
    await expect(WorkerClient.connect("127.0.0.1:1", { deadlineMs: 0 })).rejects.toThrow(
      /a deadline is a positive number of milliseconds/,
    );
    await expect(
      WorkerClient.connect("127.0.0.1:1", { minVersion: 2, maxVersion: 1 }),
    ).rejects.toThrow(/client's version range 1.2–1.1/);
  });

  test("array byte lengths follow NumPy itemsizes", () => {
    expect(arrayByteLength(new ShapeDtypeStruct([8, 4], "float32"))).toBe(128);
    expect(arrayByteLength(new ShapeDtypeStruct([], "complex128"))).toBe(16);
    expect(arrayByteLength(new ShapeDtypeStruct([3], "int4"))).toBe(3);
    expect(arrayByteLength(new ShapeDtypeStruct([0, 5], "bfloat16"))).toBe(0);
    expect(arrayByteLength(new ShapeDtypeStruct([2], "string"))).toBeUndefined();
    const rbg = { impl: "rbg", keyShape: [4] };
    expect(arrayByteLength(new ShapeDtypeStruct([3], "key", null, { keyType: rbg }))).toBe(48);
    expect(arrayByteLength(new ShapeDtypeStruct([3], "float0"))).toBe(0);
  });
});
