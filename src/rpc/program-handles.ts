import { createHash } from "node:crypto";
import { ProgramPayload } from "../../gen/ts/colocated/v1/payload";
import { lowerProgramPayload } from "../encode";
import { DecodeError } from "../errors";
import type { Program } from "../model/program";

/** Programs whose handles a client remembers; past this, the least recently used is forgotten. */
const MAX_REMEMBERED = 1024;

/** A program as the client sends it: its message, and the digest of its bytes that keys it. */
export interface SentProgram {
  message: ProgramPayload;
  key: string;
}

/**
 * The handles a worker gave for a client's programs: each program is loaded once
 * (LoadProgram), and later calls name it by handle. A Program model is lowered once per
 * object, so a program must not be changed after it was first called.
 */
export class ProgramHandles {
  private readonly lowered = new WeakMap<Program, SentProgram>();
  private readonly handles = new Map<string, Promise<Uint8Array>>();
  /** LoadProgram calls made: first calls of a program, and loads again after NOT_FOUND. */
  loads = 0;

  constructor(
    private readonly version: number,
    private readonly load: (program: ProgramPayload) => Promise<Uint8Array>,
  ) {}

  /** The program's message at the client's version, and its key. */
  sent(program: Program | Uint8Array): SentProgram {
    if (program instanceof Uint8Array)
      return { message: parseProgram(program), key: sha256(program) };
    let sent = this.lowered.get(program);
    if (!sent) {
      const message = lowerProgramPayload(program, { targetMinorVersion: this.version });
      sent = { message, key: sha256(ProgramPayload.encode(message).finish()) };
      this.lowered.set(program, sent);
    }
    return sent;
  }

  /** The program's handle on the worker; loads it unless it is loaded (or loading) already. */
  handle(sent: SentProgram): Promise<Uint8Array> {
    const known = this.handles.get(sent.key);
    if (known) {
      this.handles.delete(sent.key); // re-inserted: the most recently used is last
      this.handles.set(sent.key, known);
      return known;
    }
    this.loads += 1;
    const loading = this.load(sent.message);
    loading.catch(() => this.forget(sent, loading));
    this.handles.set(sent.key, loading);
    if (this.handles.size > MAX_REMEMBERED) {
      this.handles.delete(this.handles.keys().next().value as string);
    }
    return loading;
  }

  /** Forgets a handle the worker does not hold (NOT_FOUND), unless a newer load replaced it. */
  forget(sent: SentProgram, handle: Promise<Uint8Array>): void {
    if (this.handles.get(sent.key) === handle) this.handles.delete(sent.key);
  }
}

/** The message of program bytes; the worker, not the client, judges what is in it. */
function parseProgram(bytes: Uint8Array): ProgramPayload {
  try {
    return ProgramPayload.decode(bytes);
  } catch (error) {
    const detail = `not a valid protobuf message (${(error as Error).message})`;
    throw new DecodeError("payload", "malformed", detail);
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}
