import { createHash } from "node:crypto";
import { ProgramPayload } from "../../../gen/ts/colocated/v1/payload";
import { encodeProgram } from "../../encode";
import { DecodeError } from "../../errors";
import type { Program } from "../../model/program";
import { loadRequest } from "../messages/load-program-request";

/** Programs whose handles a client remembers; past this, the least recently used is forgotten. */
const MAX_REMEMBERED = 1024;

/**
 * A program as a client sends it at one version: its LoadProgramRequest's bytes, and the
 * SHA-256 of its payload's bytes that keys its handle.
 */
export interface SentProgram {
  request: Uint8Array;
  key: string;
}

/**
 * Programs lowered and encoded once per version for every client: the members of a
 * WorkerGroup (one client each) share one lowering, one encoding and one digest.
 */
const LOWERED = new WeakMap<Program, Map<number, SentProgram>>();

/**
 * The program (a model, or ProgramPayload bytes sent as they are) as a client at `version`
 * sends it. A Program model is lowered once per object and version, so a program must not be
 * changed after it was first called. Bytes that are not a protobuf message throw DecodeError;
 * the worker, not the client, judges what is in them.
 */
export function sentProgram(program: Program | Uint8Array, version: number): SentProgram {
  if (program instanceof Uint8Array) {
    parseProgram(program);
    return { request: loadRequest(version, program), key: sha256(program) };
  }
  let byVersion = LOWERED.get(program);
  if (!byVersion) {
    byVersion = new Map();
    LOWERED.set(program, byVersion);
  }
  let sent = byVersion.get(version);
  if (!sent) {
    const bytes = encodeProgram(program, { targetMinorVersion: version });
    sent = { request: loadRequest(version, bytes), key: sha256(bytes) };
    byVersion.set(version, sent);
  }
  return sent;
}

/**
 * The handles a worker gave for a client's programs: each program is loaded once
 * (LoadProgram), and later calls name it by handle.
 */
export class ProgramHandles {
  private readonly handles = new Map<string, Promise<Uint8Array>>();
  /** LoadProgram calls made: first calls of a program, and loads again after NOT_FOUND. */
  loads = 0;

  constructor(private readonly load: (program: SentProgram) => Promise<Uint8Array>) {}

  /** The program's handle on the worker; loads it unless it is loaded (or loading) already. */
  handle(sent: SentProgram): Promise<Uint8Array> {
    const known = this.handles.get(sent.key);
    if (known) {
      this.handles.delete(sent.key); // re-inserted: the most recently used is last
      this.handles.set(sent.key, known);
      return known;
    }
    this.loads += 1;
    const loading = this.load(sent);
    loading.catch(() => this.forget(sent, loading));
    this.handles.set(sent.key, loading);
    if (this.handles.size > MAX_REMEMBERED) {
      this.handles.delete(this.handles.keys().next().value as string);
    }
    return loading;
  }

  /** Loads the program again, forgetting the handle the worker said it does not hold. */
  reload(sent: SentProgram): Promise<Uint8Array> {
    this.handles.delete(sent.key);
    return this.handle(sent);
  }

  /** Forgets a handle the worker does not hold (NOT_FOUND), unless a newer load replaced it. */
  forget(sent: SentProgram, handle: Promise<Uint8Array>): void {
    if (this.handles.get(sent.key) === handle) this.handles.delete(sent.key);
  }
}

/** Checks that program bytes are a protobuf message (DecodeError otherwise). */
function parseProgram(bytes: Uint8Array): void {
  try {
    ProgramPayload.decode(bytes);
  } catch (error) {
    const detail = `not a valid protobuf message (${(error as Error).message})`;
    throw new DecodeError("payload", "malformed", detail);
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}
