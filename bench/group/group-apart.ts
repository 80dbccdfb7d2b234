import { spawn } from "node:child_process";
import { createInterface } from "node:readline";

/**
 * A group measured in a controller process of its own: its CPU and memory are then the
 * group's alone, not the heap, compiled code and collector threads that the bench's other
 * parts left in the bench's process. The child is a bench script that calls `answerApart`.
 */

/**
 * Runs `script` (a compiled bench file) with `args` in a new process and returns the result it
 * sent, passing its progress on; throws when it exits without one.
 */
export async function measureApart<T>(
  script: string,
  args: readonly (string | number)[],
  progress: (task: string) => void,
): Promise<T> {
  const child = spawn(process.execPath, [script, ...args.map(String)], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  let result: T | undefined;
  for await (const line of createInterface({ input: child.stdout })) {
    const space = line.indexOf(" ");
    const [kind, rest] = [line.slice(0, space), line.slice(space + 1)];
    if (kind === "progress") progress(rest);
    else if (kind === "result") result = JSON.parse(rest) as T;
  }
  const code = await exited;
  if (code !== 0 || result === undefined) {
    throw new Error(`${script} ${args.join(" ")} exited ${code} without its result`);
  }
  return result;
}

/** In the child: runs `measure` with a progress that reaches the parent, sends its result, and exits. */
export function answerApart<T>(measure: (progress: (task: string) => void) => Promise<T>): void {
  const say = (kind: string, text: string, then?: () => void) =>
    process.stdout.write(`${kind} ${text}\n`, then);
  measure((task) => say("progress", task))
    // Everything it started is stopped; exiting once the result is written waits on nothing
    // grpc-js keeps.
    .then((result) => say("result", JSON.stringify(result), () => process.exit(0)))
    .catch((error) => {
      console.error(error);
      process.exit(1);
    });
}
