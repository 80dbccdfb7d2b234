import { Command } from "commander";
import type { WorkerRuntime } from "../../gen/ts/colocated/v1/service";
import { DEFAULT_DEADLINE_MS, WorkerClient } from "../rpc/client/client";
import type { JobDevice, Topology } from "../rpc/client/topology";
import type { MemberRuntime } from "../rpc/group/group-runtime";
import { describeDevices } from "../rpc/group/group-topology";
import { WorkerGroup } from "../rpc/group/worker-group";
import { repeat, whole } from "./call";

interface TopologyOptions {
  worker: string[];
  deadline: number;
  json?: boolean;
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
    .option("--json", "print the job, each process's worker and what it runs, as JSON")
    .action(async (options: TopologyOptions) => {
      const connect = { deadlineMs: options.deadline };
      const show = (job: JobShape, workers: Map<number, MemberRuntime>, differences: string[]) =>
        console.log(
          options.json
            ? JSON.stringify(topologyJson(job, workers, differences), null, 2)
            : formatTopology(job, workers, differences),
        );
      if (options.worker.length === 1) {
        const client = await WorkerClient.connect(options.worker[0], connect);
        try {
          const topology = await client.getTopology();
          const worker = { target: client.target, runtime: client.runtime };
          show(topology, new Map([[topology.processIndex, worker]]), []);
        } finally {
          client.close();
        }
        return;
      }
      const group = await WorkerGroup.connect(options.worker, connect);
      try {
        const { processCount, devices } = group.topology;
        const workers = new Map(
          group.members.map((m, i) => [
            m.processIndex,
            { target: m.target, runtime: group.runtimes[i] },
          ]),
        );
        show({ processCount, devices }, workers, [...group.runtimeDifferences]);
      } finally {
        group.close();
      }
    });
}

type JobShape = Pick<Topology, "processCount" | "devices">;

/**
 * The job in a line, then a line per process (its worker, when known, and its devices) and
 * what that worker runs; then how the workers' runtimes differ, if they do.
 */
export function formatTopology(
  job: JobShape,
  workers: ReadonlyMap<number, MemberRuntime>,
  differences: readonly string[] = [],
): string {
  const kinds = [...new Set(job.devices.map(kindOf))].join(", ");
  const labels = Array.from(
    { length: job.processCount },
    (_, p) => workers.get(p)?.target ?? "(no worker given)",
  );
  const width = Math.max(...labels.map((label) => label.length));
  const processes = job.processCount === 1 ? "1 process" : `${job.processCount} processes`;
  const lines = [`a JAX job of ${processes}, ${job.devices.length} devices (${kinds})`];
  for (let p = 0; p < job.processCount; p++) {
    const devices = job.devices.filter((d) => d.processIndex === p);
    const label = labels[p].padEnd(width);
    lines.push(`process ${p}  ${label}  ${describeDevices(devices)}${coordsOf(devices)}`);
    const worker = workers.get(p);
    if (worker) lines.push(`  runs ${describeRuntime(worker.runtime)}`);
  }
  for (const difference of differences) lines.push(`differs in ${difference}`);
  return lines.join("\n");
}

/** "colocated-wire 0.1.0, Python 3.11.7, jax 0.10.2, jaxlib 0.10.2, ... (cpu: cpu)". */
export function describeRuntime(r: WorkerRuntime | undefined): string {
  if (r === undefined) return "(not said: a worker older than WorkerRuntime)";
  const versions = `colocated-wire ${r.colocatedWire}, Python ${r.python}, jax ${r.jax}, jaxlib ${r.jaxlib}, numpy ${r.numpy}, cloudpickle ${r.cloudpickle}`;
  return `${versions} (${r.platform}: ${r.deviceKind})`;
}

/** The same as JSON: the job, each process's worker and runtime, the differences. */
function topologyJson(
  job: JobShape,
  workers: ReadonlyMap<number, MemberRuntime>,
  differences: readonly string[],
) {
  return {
    processCount: job.processCount,
    processes: Array.from({ length: job.processCount }, (_, p) => ({
      process: p,
      worker: workers.get(p)?.target ?? null,
      runtime: workers.get(p)?.runtime ?? null,
      devices: job.devices.filter((d) => d.processIndex === p),
    })),
    differences,
  };
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
