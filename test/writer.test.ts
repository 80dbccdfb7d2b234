import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ProgramPayload, SpecsPayload, type WriterLanguage } from "../gen/ts/colocated/v1/payload";
import {
  canonicalizePayload,
  DecodeError,
  decodeProgram,
  decodeSpecs,
  describeWriter,
  encodeProgram,
  encodeSpecs,
  PickledFunction,
  payloadWriter,
  ShapeDtypeStruct,
  SingleDeviceSharding,
  thisWriter,
  treeFlatten,
} from "../src";
import { diffPayloads } from "../src/diff";
import { formatInspection, inspectPayload } from "../src/inspector/inspection";
import { inspectView } from "../src/inspector/view";
import { PYTHON_WRITER } from "./fixtures";

/** A payload's writer (colocated.v1.3): named when asked, left out for an older target. */

const vector = (name: string) =>
  new Uint8Array(readFileSync(join(__dirname, "vectors", `${name}.bin`)));

function specs(options: Parameters<typeof encodeSpecs>[2] = {}): Uint8Array {
  const leaf = new ShapeDtypeStruct([8], "float32", new SingleDeviceSharding(0));
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>([leaf]);
  return encodeSpecs(treedef, leaves, options);
}

describe("a payload's writer", () => {
  test("this library names itself: its package version, in TypeScript", () => {
    const { version } = JSON.parse(readFileSync(join(__dirname, "..", "package.json"), "utf8"));
    expect(thisWriter()).toEqual({ library: "colocated-wire", version, language: "typescript" });
    expect(describeWriter(thisWriter())).toBe(`colocated-wire ${version} (typescript)`);
  });

  test("it is written when asked, for a 1.3 reader only", () => {
    expect(payloadWriter(specs())).toBeUndefined();
    expect(payloadWriter(specs({ writer: PYTHON_WRITER }))).toEqual(PYTHON_WRITER);
    const older = SpecsPayload.decode(
      specs({ writer: PYTHON_WRITER, targetMinorVersion: 2 }),
    ).header;
    expect([older?.minorVersion, older?.writer]).toEqual([2, undefined]);
    expect(specs({ writer: PYTHON_WRITER, targetMinorVersion: 2 })).toEqual(
      specs({ targetMinorVersion: 2 }),
    );
  });

  test("the vectors name theirs, and canonical bytes keep it", () => {
    expect(payloadWriter(vector("writer_python_1_3"))).toEqual(PYTHON_WRITER);
    const ts = payloadWriter(vector("writer_typescript_1_3"));
    expect(ts).toEqual({ library: "colocated-wire", version: "0.1.0", language: "typescript" });
    expect(describeWriter(PYTHON_WRITER)).toBe(
      "colocated-wire 0.1.0 (python 3.12, jax 0.10.2, cloudpickle 3.1.1)",
    );
    for (const name of ["writer_python_1_3", "writer_typescript_1_3"]) {
      expect(canonicalizePayload(vector(name))).toEqual(vector(name));
    }
  });

  test("a writer under an older header is refused, naming the version it needs", () => {
    const message = SpecsPayload.decode(specs({ writer: PYTHON_WRITER }));
    message.header!.minorVersion = 2;
    const bytes = SpecsPayload.encode(message).finish();
    const error = (() => {
      try {
        decodeSpecs(bytes);
      } catch (e) {
        return e as DecodeError;
      }
      throw new Error("decoded");
    })();
    expect(error).toBeInstanceOf(DecodeError);
    expect([error.path, error.code]).toEqual(["header.writer", "unsupported-version"]);
    expect(error.detail).toBe("a writer needs colocated.v1.3; the header says 1.2");
  });

  test("a writer's language of a newer version is read as unknown", () => {
    const message = ProgramPayload.decode(vector("writer_typescript_1_3"));
    message.header!.writer!.language = 7 as WriterLanguage;
    const writer = payloadWriter(ProgramPayload.encode(message).finish());
    expect(writer).toEqual({ library: "colocated-wire", version: "0.1.0" });
    expect(describeWriter(writer!)).toBe("colocated-wire 0.1.0 (language unknown)");
  });

  test("inspect, its page and the diff show it", () => {
    const bytes = vector("writer_python_1_3");
    expect(formatInspection(inspectPayload(bytes)).split("\n")[1]).toBe(
      "written by colocated-wire 0.1.0 (python 3.12, jax 0.10.2, cloudpickle 3.1.1)",
    );
    expect(inspectView(bytes).view.header?.writer).toEqual(PYTHON_WRITER);
    expect(inspectView(specs()).view.header).not.toHaveProperty("writer");
    const other = { ...PYTHON_WRITER, python: "3.11" };
    const diff = diffPayloads(specs({ writer: other }), specs({ writer: PYTHON_WRITER }));
    expect(diff.groups.map((g) => [g.cause, g.text])).toEqual([
      [
        "writer",
        "writer colocated-wire 0.1.0 (python 3.11, jax 0.10.2, cloudpickle 3.1.1) to colocated-wire 0.1.0 (python 3.12, jax 0.10.2, cloudpickle 3.1.1)",
      ],
    ]);
    const added = diffPayloads(specs(), specs({ writer: thisWriter() }));
    expect(added.groups.map((g) => [g.a, g.b])).toEqual([[null, describeWriter(thisWriter())]]);
  });
});

test("a writer read and written again keeps what this reader does not know", () => {
  const message = ProgramPayload.decode(vector("writer_typescript_1_3"));
  message.header!.writer!.language = 7 as WriterLanguage; // a language of a newer version
  message.header!.writer!._unknownFields = { [9 * 8]: [new Uint8Array([1])] }; // a newer field
  const bytes = ProgramPayload.encode(message).finish();
  expect(canonicalizePayload(bytes)).toEqual(bytes);
  // A writer changed after it was read is written as it now is.
  const writer = payloadWriter(bytes)!;
  writer.version = "0.2.0";
  const rewritten = SpecsPayload.decode(specs({ writer })).header!.writer!;
  expect([rewritten.version, rewritten.language, rewritten._unknownFields]).toEqual([
    "0.2.0",
    0,
    {},
  ]);
});

test("a pickle passed on names the writer that wrote it, never this process", () => {
  const seed = new Uint8Array(
    readFileSync(join(__dirname, "fuzz", "seeds", "program-pickled-writer.bin")),
  );
  const program = decodeProgram(seed);
  expect(program.function).toBeInstanceOf(PickledFunction);
  expect(payloadWriter(encodeProgram(program))).toEqual(PYTHON_WRITER);
  expect(payloadWriter(encodeProgram(program, { writer: thisWriter() }))).toEqual(thisWriter());
  // A program by name carries no pickle: none is named unless asked.
  const byName = decodeProgram(vector("program_by_name"));
  expect(payloadWriter(encodeProgram(byName))).toBeUndefined();
});
