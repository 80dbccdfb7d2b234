import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { SpecsPayload } from "../gen/ts/colocated/v1/payload";
import {
  AxisType,
  DeviceList,
  DTypeValue,
  encodeProgram,
  encodeSpecs,
  encodeValue,
  FunctionRef,
  Mesh,
  NamedSharding,
  PartitionSpec,
  ShapeDtypeStruct,
  type SingleDeviceSharding,
  treeFlatten,
  tuple,
  type ValueLeaf,
} from "../src";
import { DiffInputError, diffPayloads } from "../src/diff/diff-payloads";
import { formatDiff } from "../src/diff/format-diff";
import type { PayloadDiff } from "../src/diff/payload-diff";
import { range } from "./fixtures";

const CLI = join(__dirname, "..", "dist", "src", "cli", "main.js");
const dir = mkdtempSync(join(tmpdir(), "colocated-wire-diff-"));

const f32 = (shape: number[], sharding: NamedSharding | SingleDeviceSharding | null = null) =>
  new ShapeDtypeStruct(shape, "float32", sharding);

function specs(tree: unknown, minor?: number): Uint8Array {
  const { treedef, leaves } = treeFlatten<ShapeDtypeStruct>(tree);
  return encodeSpecs(treedef, leaves, minor === undefined ? {} : { targetMinorVersion: minor });
}

/** The diff's lines after the first. */
function lines(a: Uint8Array, b: Uint8Array): string[] {
  return formatDiff(diffPayloads(a, b)).split("\n").slice(1);
}

/** A 2x4 mesh over the devices `ids`. */
function mesh(ids = range(8), sizes = [2, 4], names = ["x", "y"], types?: AxisType[]): Mesh {
  return new Mesh(new DeviceList(ids), sizes, names, types);
}

/** A model of 1,000 layers, each a weight and a bias, on `m`; `w` is the weights' spec. */
function layers(
  m: Mesh,
  w: PartitionSpec,
  bias = f32([8], new NamedSharding(m, new PartitionSpec())),
) {
  return {
    layers: Array.from({ length: 1000 }, () => ({
      w: f32([8, 4], new NamedSharding(m, w)),
      b: bias,
    })),
  };
}

describe("diff: payloads compared by value", () => {
  test("a payload and itself are the same, and say so first", () => {
    const a = specs(layers(mesh(), new PartitionSpec("x", "y")));
    const diff = diffPayloads(a, a);
    expect(diff).toMatchObject({ same: true, equal: true, differingLeaves: 0, groups: [] });
    expect(formatDiff(diff)).toBe(
      `a and b are the same (${a.length.toLocaleString("en-US")} bytes)`,
    );
  });

  test("1,000 leaves on one changed sharding are one line, by path with [*]", () => {
    const m = mesh();
    const a = specs(layers(m, new PartitionSpec("x", "y")));
    const b = specs(layers(m, new PartitionSpec("y", "x")));
    const diff = diffPayloads(a, b);
    expect(formatDiff(diff).split("\n")).toEqual([
      "a and b differ: 1,000 leaves in 1 group",
      expect.stringMatching(
        /^ {2}1,000 leaves under \["layers"\]\[\*\]\["w"\]: sharding #\d+ to #\d+, PartitionSpec\('x', 'y'\) to \('y', 'x'\)$/,
      ),
    ]);
    expect(diff.groups[0].paths).toEqual([
      { part: "specs", path: '["layers"][*]["w"]', count: 1000 },
    ]);
  });

  test("a list's leaves that differ alike by several pairs of specs: one group, in order", () => {
    const m = mesh();
    const on = (spec: PartitionSpec) => new NamedSharding(m, spec);
    const [x, y] = [on(new PartitionSpec("x")), on(new PartitionSpec("y"))];
    const list = (dtype: "float32" | "bfloat16", changed: (i: number) => boolean) =>
      specs(
        Array.from({ length: 6 }, (_, i) => {
          const sharding = i % 2 ? y : x;
          return new ShapeDtypeStruct([8], changed(i) ? dtype : "float32", sharding);
        }),
      );
    const a = list("float32", () => false);
    // Leaves 3 (on y) and 4 (on x): two pairs of specs, one cause, the paths in leaf order.
    const two = diffPayloads(
      a,
      list("bfloat16", (i) => i === 3 || i === 4),
    );
    expect(two.groups.map((g) => [g.text, g.paths.map((p) => p.path)])).toEqual([
      ["dtype float32 to bfloat16", ["[3]", "[4]"]],
    ]);
    // Leaves 1, 2, 5: three siblings alike are one `[*]`; all six, the root.
    const three = diffPayloads(
      a,
      list("bfloat16", (i) => [1, 2, 5].includes(i)),
    );
    expect(three.groups[0].paths).toEqual([{ part: "specs", path: "[*]", count: 3 }]);
    const all = diffPayloads(
      a,
      list("bfloat16", () => true),
    );
    expect(all.differingLeaves).toBe(6);
    expect(all.groups[0].paths).toEqual([{ part: "specs", path: "", count: 6 }]);
  });

  test("the tree: keys added and removed, node types, None against a leaf, lengths", () => {
    const leaf = f32([2]);
    const a = specs({ a: tuple(leaf, leaf), b: null, c: [leaf], d: leaf, gone: leaf });
    const b = specs({ a: [leaf, leaf], b: leaf, c: [leaf, leaf], d: leaf, new: [leaf, leaf] });
    expect(lines(a, b)).toEqual([
      '  1 node at (root): key "gone" removed, key "new" added (3 leaves)',
      '  1 node at ["a"]: tuple to list',
      '  1 node at ["b"]: None to leaf (1 leaf)',
      '  1 node at ["c"]: length 1 to 2 (1 leaf)',
    ]);
  });

  test("the leaves: shape, dtype, weak_type, each at its path", () => {
    const a = specs({ s: f32([2, 3]), d: f32([4]), w: f32([1]) });
    const b = specs({
      s: f32([3, 2]),
      d: new ShapeDtypeStruct([4], "bfloat16"),
      w: new ShapeDtypeStruct([1], "float32", null, { weakType: true }),
    });
    expect(lines(a, b)).toEqual([
      '  1 leaf at ["d"]: dtype float32 to bfloat16',
      '  1 leaf at ["s"]: shape (2, 3) to (3, 2)',
      '  1 leaf at ["w"]: weak_type False to True',
    ]);
  });

  test("a mesh's axis names, sizes and types; a memory kind; unreduced and reduced axes", () => {
    const explicit = [AxisType.Explicit, AxisType.Explicit];
    const on = (m: Mesh, spec: PartitionSpec, memoryKind?: string) =>
      specs([f32([8, 8], new NamedSharding(m, spec, { memoryKind }))]);
    const [names, sizes, types] = [
      mesh(range(8), [2, 4], ["a", "y"]),
      mesh(range(8), [4, 2]),
      mesh(range(8), [2, 4], ["x", "y"], explicit),
    ];
    const base = on(mesh(), new PartitionSpec());
    expect(lines(base, on(names, new PartitionSpec()))[0]).toMatch(
      /mesh #\d+ to #\d+, axis names \('x', 'y'\) to \('a', 'y'\)$/,
    );
    expect(lines(base, on(sizes, new PartitionSpec()))[0]).toMatch(
      /axis sizes \(2, 4\) to \(4, 2\)/,
    );
    expect(lines(base, on(types, new PartitionSpec()))[0]).toMatch(
      /axis types \(Auto, Auto\) to \(Explicit, Explicit\)$/,
    );
    expect(lines(base, on(mesh(), new PartitionSpec(), "pinned_host"))[0]).toMatch(
      /1 leaf at \[0\]: sharding #\d+ to #\d+, memory kind device to pinned_host$/,
    );
    const reduced = PartitionSpec.create([], { unreduced: ["x"], reduced: ["y"] });
    expect(lines(on(types, new PartitionSpec()), on(types, reduced))[0]).toMatch(
      /, unreduced \{\} to \{'x'\}, reduced \{\} to \{'y'\}$/,
    );
  });

  test("a device order: a transposed iota, two devices swapped, devices replaced", () => {
    const on = (m: Mesh) => specs([f32([8], new NamedSharding(m, new PartitionSpec("x")))]);
    const inOrder = on(mesh(range(1024), [16, 64], ["x", "y"]));
    const transposed = range(1024).map((i) => (i % 16) * 64 + Math.floor(i / 16));
    expect(lines(inOrder, on(mesh(transposed, [64, 16], ["x", "y"])))[0]).toMatch(
      /axis sizes \(16, 64\) to \(64, 16\), device order iota \[16, 64\] to \[64, 16\] transposed$/,
    );
    const swapped = range(8);
    [swapped[3], swapped[5]] = [5, 3];
    const diff = diffPayloads(on(mesh()), on(mesh(swapped)));
    expect(formatDiff(diff)).toMatch(/mesh #\d+ to #\d+, devices 3 and 5 swapped$/);
    expect(diff.groups[0].details[0]).toMatchObject({
      field: "devices",
      change: { kind: "swapped", devices: [3, 5], positions: [3, 5] },
    });
    expect(lines(on(mesh()), on(mesh(range(8, 8))))[0]).toMatch(
      /devices 0, 1, 2, 3, 4, 5, 6, 7 removed, devices 8, 9, 10, 11, 12, 13, 14, 15 added$/,
    );
  });

  test("the header's schema version and a program's function and devices", () => {
    const leaf = f32([2]);
    expect(lines(specs([leaf], 0), specs([leaf], 1))).toEqual([
      "  schema version colocated.v1.0 to colocated.v1.1",
    ]);
    const program = (qualname: string, devices: number[]) =>
      encodeProgram({
        function: new FunctionRef("colocated_wire.examples", qualname),
        inputs: treeFlatten<ShapeDtypeStruct>(tuple(tuple(leaf), {})),
        devices: new DeviceList(devices),
      });
    const swapped = [1, 0, 2, 3];
    expect(lines(program("summarize", range(4)), program("train_step", swapped))).toEqual([
      "  function colocated_wire.examples.summarize to colocated_wire.examples.train_step",
      expect.stringMatching(/^ {2}device list #\d+ to #\d+, devices 0 and 1 swapped$/),
    ]);
  });

  test("a value's leaves: table objects by value, dtypes, functions, kinds", () => {
    const value = (tree: unknown) => {
      const { treedef, leaves } = treeFlatten<ValueLeaf>(tree);
      return encodeValue(treedef, leaves);
    };
    const swapped = range(8);
    [swapped[3], swapped[5]] = [5, 3];
    const a = value(tuple(mesh(), new DTypeValue("float32"), new FunctionRef("m", "f"), [mesh()]));
    const b = value(
      tuple(mesh(swapped), new DTypeValue("bfloat16"), new FunctionRef("m", "g"), [
        new DTypeValue("int8"),
      ]),
    );
    expect(lines(a, b)).toEqual([
      expect.stringMatching(/^ {2}1 leaf at \[0\]: mesh #\d+ to #\d+, devices 3 and 5 swapped$/),
      "  1 leaf at [1]: dtype float32 to bfloat16",
      "  1 leaf at [2]: function m.f to m.g",
      "  1 leaf at [3][0]: Mesh to dtype",
    ]);
  });

  test("bytes that differ with contents equal (a reordered table) are said to", () => {
    const m = mesh();
    const a = specs([f32([8], new NamedSharding(m, new PartitionSpec("x"))), f32([4])]);
    const message = SpecsPayload.decode(a);
    const entries = message.table?.entries ?? [];
    // The last entry (the second leaf's spec, which refers to nothing) moves to the front.
    const order = [entries.length - 1, ...range(entries.length - 1)];
    const at = (i: number) => order.indexOf(i);
    const moved = order.map((i) => structuredClone(entries[i]));
    for (const entry of moved) {
      const kind = entry.kind;
      if (kind?.$case === "arraySpec" && kind.value.sharding !== undefined)
        kind.value.sharding = at(kind.value.sharding);
      if (kind?.$case === "namedSharding") kind.value.mesh = at(kind.value.mesh as number);
      if (kind?.$case === "mesh") kind.value.deviceList = at(kind.value.deviceList as number);
    }
    const b = SpecsPayload.encode({
      ...message,
      table: { entries: moved },
      specs: { ...message.specs!, leaves: message.specs!.leaves.map(at) },
    }).finish();
    const diff = diffPayloads(a, b);
    expect(diff).toMatchObject({ same: false, equal: true, groups: [] });
    expect(formatDiff(diff, ["x.bin", "y.bin"])).toBe(
      "x.bin and y.bin: bytes differ, contents equal",
    );
  });

  test("a payload that does not decode, or of another kind, is a DiffInputError naming it", () => {
    const a = specs([f32([2])]);
    expect(() => diffPayloads(a, new Uint8Array([0xff]))).toThrow(
      expect.objectContaining({ input: "b", message: expect.stringMatching(/^b: payload: /) }),
    );
    const program = encodeProgram({
      function: new FunctionRef("m", "f"),
      inputs: treeFlatten<ShapeDtypeStruct>(tuple(tuple(), {})),
      devices: new DeviceList([0]),
    });
    const error = (() => {
      try {
        diffPayloads(a, program);
      } catch (e) {
        return e as DiffInputError;
      }
    })();
    expect(error).toBeInstanceOf(DiffInputError);
    expect(error?.cause.code).toBe("wrong-payload-kind");
    expect(error?.message).toBe("b: header.kind: this is a program payload, not a specs payload");
  });
});

describe("colocated-wire diff", () => {
  const file = (name: string, bytes: Uint8Array) => {
    const path = join(dir, name);
    writeFileSync(path, bytes);
    return path;
  };
  const run = (...args: string[]) =>
    spawnSync("node", [CLI, "diff", ...args], { encoding: "utf8" });
  const m = mesh();
  const a = file("a.bin", specs(layers(m, new PartitionSpec("x", "y"))));
  const b = file("b.bin", specs(layers(m, new PartitionSpec("y", "x"))));

  test("exit status 0 when the same, 1 when they differ, as diff(1)", () => {
    expect(run(a, a)).toMatchObject({ status: 0, stdout: expect.stringMatching(/are the same/) });
    const differ = run(a, b);
    expect(differ.status).toBe(1);
    expect(differ.stdout).toMatch(
      /^.*a\.bin and .*b\.bin differ: 1,000 leaves in 1 group\n {2}1,000 leaves under/,
    );
    expect(differ.stderr).toBe("");
  });

  test("exit status 2 and one line for a file it cannot read or two kinds of payload", () => {
    const garbage = run(file("garbage.bin", new Uint8Array([0xff, 0xff])), a);
    expect(garbage.status).toBe(2);
    expect(garbage.stderr).toMatch(
      /^colocated-wire: .*garbage\.bin: payload: not a valid protobuf/,
    );
    const missing = run(a, join(dir, "missing.bin"));
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^colocated-wire: .*missing\.bin: no such file or folder\n$/);
    // Trouble with an input is no usage mistake: one clean line, no hint at --help.
    for (const failed of [garbage, missing]) expect(failed.stderr).not.toContain("--help");
    const usage = run("--base64", "--json-form", a, a);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain("(see colocated-wire diff --help)");
    const program = file(
      "program.bin",
      encodeProgram({
        function: new FunctionRef("m", "f"),
        inputs: treeFlatten<ShapeDtypeStruct>(tuple(tuple(), {})),
        devices: new DeviceList([0]),
      }),
    );
    const kinds = run(a, program);
    expect(kinds.status).toBe(2);
    expect(kinds.stderr).toMatch(
      /^colocated-wire: .*program\.bin: header\.kind: this is a program payload, not a specs payload/,
    );
    expect(kinds.stdout).toBe("");
  });

  test("--json prints the structured result; --base64 reads carriers' text", () => {
    const json = run("--json", a, b);
    expect(json.status).toBe(1);
    const diff = JSON.parse(json.stdout) as PayloadDiff;
    expect(diff).toEqual(
      JSON.parse(
        JSON.stringify(
          diffPayloads(
            specs(layers(m, new PartitionSpec("x", "y"))),
            specs(layers(m, new PartitionSpec("y", "x"))),
          ),
        ),
      ),
    );
    expect(Object.keys(diff)).toEqual([
      "version",
      "kind",
      "same",
      "equal",
      "bytes",
      "leaves",
      "differingLeaves",
      "groups",
    ]);
    expect(Object.keys(diff.groups[0])).toEqual([
      "cause",
      "text",
      "count",
      "leaves",
      "paths",
      "entries",
      "a",
      "b",
      "details",
    ]);
    const form = (path: string) => {
      const decoded = spawnSync("node", [CLI, "decode", path], { encoding: "utf8" }).stdout;
      return file(`${basename(path)}.json`, Buffer.from(decoded));
    };
    expect(run("--json-form", form(a), form(b)).stdout).toMatch(/differ: 1,000 leaves in 1 group/);
    const text = (path: string) =>
      file(
        `${path}.txt`,
        Buffer.from(Buffer.from(specs(layers(m, new PartitionSpec("x", "y")))).toString("base64")),
      );
    expect(run("--base64", text("c"), text("d")).status).toBe(0);
  });
});
