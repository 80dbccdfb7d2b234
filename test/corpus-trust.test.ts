import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  DeviceList,
  decodeProgram,
  encodeProgram,
  PickledFunction,
  ShapeDtypeStruct,
  treeFlatten,
} from "../src";

/**
 * The trust boundary: a program whose pickled function would run a shell command when loaded
 * (test/corpus/trust/pickled-exploit.bin). Decoding it runs nothing, here and in Python
 * (python/tests/test_corpus_trust.py), where deserialize_program loads a pickle only when
 * asked to. UPDATE_CORPUS=1 rewrites the file.
 */
const FILE = join(__dirname, "corpus", "trust", "pickled-exploit.bin");
/** The file the pickle's command would create. */
const PWNED = "/tmp/colocated-wire-pwned";

/** os.system("touch PWNED"), as protocol 0 pickle opcodes: GLOBAL, MARK, STRING, TUPLE, REDUCE, STOP. */
const EXPLOIT = new TextEncoder().encode(`cos\nsystem\n(S'touch ${PWNED}'\ntR.`);

function exploitProgram(): Uint8Array {
  const devices = new DeviceList([0, 1]);
  const inputs = treeFlatten<ShapeDtypeStruct>([new ShapeDtypeStruct([2], "float32")]);
  // A colocated.v1.0 payload, as committed.
  const program = { function: new PickledFunction(EXPLOIT, []), inputs, devices };
  return encodeProgram(program, { targetMinorVersion: 0 });
}

if (process.env.UPDATE_CORPUS) {
  mkdirSync(join(__dirname, "corpus", "trust"), { recursive: true });
  writeFileSync(FILE, exploitProgram());
}

describe("a pickled function that would run code", () => {
  test("the committed payload is what this test builds", () => {
    expect(new Uint8Array(readFileSync(FILE))).toEqual(exploitProgram());
  });

  test("decodes into its bytes, running nothing", () => {
    rmSync(PWNED, { force: true });
    const program = decodeProgram(new Uint8Array(readFileSync(FILE)));
    expect(program.function).toBeInstanceOf(PickledFunction);
    expect((program.function as PickledFunction).pickle).toEqual(EXPLOIT);
    expect(existsSync(PWNED)).toBe(false);
  });
});
