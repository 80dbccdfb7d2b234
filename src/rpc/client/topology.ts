import { GetTopologyResponse } from "../../../gen/ts/colocated/v1/service";
import { DecodeError } from "../../errors";

/** One device of a worker's JAX job, as jax.devices() lists it on every process. */
export interface JobDevice {
  /** The global device id, as meshes and device lists name it. */
  id: number;
  /** The process (jax.process_index()) that holds it. */
  processIndex: number;
  platform: string;
  kind: string;
  /** jax.Device.coords where the platform has them (TPUs); empty on CPU. */
  coords: number[];
  /** jax.Device.core_on_chip where the platform has it (TPUs); 0 elsewhere. */
  coreOnChip: number;
}

/** A worker's view of its JAX job (GetTopology): which process it is, and every global device. */
export interface Topology {
  processCount: number;
  processIndex: number;
  /** Every device of the job, in jax.devices() order. */
  devices: JobDevice[];
}

/**
 * A GetTopology answer as a Topology, checked (DecodeError): a process index below the count,
 * device ids unique and exact as numbers, each device's process in the job, and at least one
 * device on the worker's own process.
 */
export function topologyOf(response: GetTopologyResponse): Topology {
  const { processCount, processIndex } = response;
  checkProcessIndex(processCount, processIndex);
  const seen = new Set<number>();
  const devices = response.devices.map((device, i) => {
    const id = Number(device.id);
    if (!Number.isSafeInteger(id) || id < 0 || seen.has(id)) {
      const why = seen.has(id) ? "listed twice" : "not a device id";
      throw new DecodeError(`devices[${i}].id`, "invalid-value", `${device.id}: ${why}`);
    }
    if (device.processIndex >= processCount) {
      const detail = `device ${id} is on process ${device.processIndex} of a job of ${processCount}`;
      throw new DecodeError(`devices[${i}].process_index`, "invalid-value", detail);
    }
    seen.add(id);
    const { platform, kind, coords, coreOnChip } = device;
    return {
      id,
      processIndex: device.processIndex,
      platform,
      kind,
      coords: [...coords],
      coreOnChip,
    };
  });
  if (!devices.some((d) => d.processIndex === processIndex)) {
    const detail = `no device of the worker's own process ${processIndex}`;
    throw new DecodeError("devices", "invalid-value", detail);
  }
  return { processCount, processIndex, devices };
}

/** Throws DecodeError unless the process index lies in a job of `processCount` processes. */
export function checkProcessIndex(processCount: number, processIndex: number): void {
  if (processCount < 1 || processIndex >= processCount) {
    const detail = `process ${processIndex} of a job of ${processCount} processes`;
    throw new DecodeError("process_index", "invalid-value", detail);
  }
}

/** A GetTopology answer's bytes as a Topology, decoded and checked (topologyOf). */
export function topologyOfBytes(bytes: Uint8Array): Topology {
  let response: GetTopologyResponse;
  try {
    response = GetTopologyResponse.decode(bytes);
  } catch (error) {
    const detail = `the worker's GetTopologyResponse is not a protobuf message: ${(error as Error).message}`;
    throw new DecodeError("response", "malformed", detail);
  }
  return topologyOf(response);
}
