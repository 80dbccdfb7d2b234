import { channelOptions, FLOW_CONTROL_WINDOW } from "../src/rpc/channel";

describe("channelOptions", () => {
  test("every channel opens a wide receive window, with or without gzip, over the base options", () => {
    const base = { "grpc.max_receive_message_length": 1 << 20 };
    for (const compression of ["none", "gzip"] as const) {
      const options = channelOptions({ compression }, base);
      expect(options["grpc-node.flow_control_window"]).toBe(FLOW_CONTROL_WINDOW);
      expect(options["grpc.max_receive_message_length"]).toBe(1 << 20);
    }
    expect(FLOW_CONTROL_WINDOW).toBeGreaterThanOrEqual(4 << 20); // past one 1 MiB chunk, several
  });

  test("a base that names its own window keeps it", () => {
    const options = channelOptions({}, { "grpc-node.flow_control_window": 1 << 20 });
    expect(options["grpc-node.flow_control_window"]).toBe(1 << 20);
  });
});
