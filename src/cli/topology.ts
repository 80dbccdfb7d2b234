import { Command } from "commander";
import { DEFAULT_DEADLINE_MS, WorkerClient } from "../rpc/client";
import { describeDevices } from "../rpc/group-topology";
import type { JobDevice, Topology } from "../rpc/topology";
import { WorkerGroup } from "../rpc/worker-group";
import { repeat, whole } from "./call";

interface TopologyOptions {
  worker: string[];
  deadline: number;
}

/** `colocated-wire topology`: the devices of a JAX job, per process, as its workers see them. */
export function topologyCommand(): Command {
  return new Command("topology")
    .description(
      "print a JAX job's devices per process (GetTopology); with a worker per process, check they are one job",
    )
    .requiredOption(
      "-w, --worker <host:port>",
      "a worker of the job (repeat it, one per process)",
      repeat,
      [] as string[],
    )
    .option("--deadline <ms>", "deadline of each call, in ms", whole, DEFAULT_DEADLINE_MS)
    .action(async (options: TopologyOptions) => {
      const connect = { deadlineMs: options.deadline };
      if (options.worker.length === 1) {
        const client = await WorkerClient.connect(options.worker[0], connect);
        try {
          const topology = await client.getTopology();
          console.log(formatTopology(topology, new Map([[topology.processIndex, client.target]])));
        } finally {
          client.close();
        }
        return;
      }
      const group = await WorkerGroup.connect(options.worker, connect);
      try {
        const { processCount, devices } = group.topology;
        const targets = new Map(group.members.map((m) => [m.processIndex, m.target]));
        console.log(formatTopology({ processCount, devices }, targets));
      } finally {
        group.close();
      }
    });
}

/** The job in a line, then a line per process: its worker (when known) and its devices. */
export function formatTopology(
  job: Pick<Topology, "processCount" | "devices">,
  targets: ReadonlyMap<number, string>,
): string {
  const kinds = [...new Set(job.devices.map(kindOf))].join(", ");
  const labels = Array.from(
    { length: job.processCount },
    (_, p) => targets.get(p) ?? "(no worker given)",
  );
  const width = Math.max(...labels.map((label) => label.length));
  const processes = job.processCount === 1 ? "1 process" : `${job.processCount} processes`;
  const lines = [`a JAX job of ${processes}, ${job.devices.length} devices (${kinds})`];
  for (let p = 0; p < job.processCount; p++) {
    const devices = job.devices.filter((d) => d.processIndex === p);
    const label = labels[p].padEnd(width);
    lines.push(`process ${p}  ${label}  ${describeDevices(devices)}${coordsOf(devices)}`);
  }
  return lines.join("\n");
}

/** "cpu", or "tpu TPU v4" when the kind says more than the platform. */
function kindOf(device: JobDevice): string {
  return device.kind === device.platform ? device.platform : `${device.platform} ${device.kind}`;
}

/** Each device's coordinates, where the platform has them (TPUs). */
function coordsOf(devices: readonly JobDevice[]): string {
  if (!devices.some((d) => d.coords.length)) return "";
  return `, coords ${devices.map((d) => `${d.id}:(${d.coords.join(",")})`).join(" ")}`;
}
