import { ProgramPayload } from "../gen/ts/colocated/v1/payload";
import {
  type DeviceList,
  decodeProgram,
  encodeProgram,
  encodeSpecs,
  FunctionRef,
  type NamedSharding,
  PickledFunction,
  type Program,
} from "../src";
import { exampleProgram } from "../src/example";
import { smallMesh } from "./fixtures";

describe("program payloads", () => {
  test("the example program round-trips and shares one table", () => {
    const program = exampleProgram();
    const bytes = encodeProgram(program);
    const back = decodeProgram(bytes);
    expect(back.function).toEqual(new FunctionRef("train", "step"));
    expect(back.inputs.treedef.equals(program.inputs.treedef)).toBe(true);
    expect(back.outputs?.treedef.equals(program.outputs!.treedef)).toBe(true);
    expect(back.devices.equals(program.devices)).toBe(true);
    const inputMesh = (back.inputs.leaves[0].sharding as NamedSharding).mesh;
    const outputMesh = (back.outputs!.leaves[0].sharding as NamedSharding).mesh;
    expect(outputMesh).toBe(inputMesh);
    expect(inputMesh.devices).toBe(back.devices);
    expect(encodeProgram(back)).toEqual(bytes);
    const entries = ProgramPayload.decode(bytes).table!.entries;
    expect(entries[0].kind?.$case).toBe("deviceList");
    expect(entries.filter((e) => e.kind?.$case === "deviceList")).toHaveLength(1);
  });

  test("the default input specs encode to at most 4 KB", () => {
    const { treedef, leaves } = exampleProgram().inputs;
    expect(encodeSpecs(treedef, leaves).length).toBeLessThanOrEqual(4096);
  });

  test("a pickled function keeps its bytes and its refs through the table", () => {
    const mesh = smallMesh();
    const pickle = new Uint8Array([0x80, 5, 0x95, 1, 2, 3, 0x2e]);
    const program: Program = {
      function: new PickledFunction(pickle, [mesh, mesh.devices]),
      inputs: {
        treedef: exampleProgram({ leaves: 1 }).inputs.treedef,
        leaves: exampleProgram({ leaves: 1 }).inputs.leaves,
      },
      devices: mesh.devices,
    };
    const back = decodeProgram(encodeProgram(program));
    const fn = back.function as PickledFunction;
    expect(fn.pickle).toEqual(pickle);
    expect(fn.refs[0].equals(mesh)).toBe(true);
    expect(fn.refs[1]).toBe(back.devices);
    expect(back.outputs).toBeUndefined();
  });

  test("devices must be a device list entry, and a function is required", () => {
    const bytes = encodeProgram(exampleProgram({ leaves: 1 }));
    const message = ProgramPayload.decode(bytes);
    message.devices = 1;
    expect(() => decodeProgram(ProgramPayload.encode(message).finish())).toThrow(
      expect.objectContaining({ path: "devices", code: "wrong-entry-kind" }),
    );
    message.devices = 0;
    message.function = undefined;
    expect(() => decodeProgram(ProgramPayload.encode(message).finish())).toThrow(
      expect.objectContaining({ path: "function", code: "missing" }),
    );
    expect(() =>
      encodeProgram({ ...exampleProgram({ leaves: 1 }), devices: [] as unknown as DeviceList }),
    ).toThrow(/must be a DeviceList/);
  });
});
