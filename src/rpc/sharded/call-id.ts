import { randomUUID } from "node:crypto";
import { Metadata } from "@grpc/grpc-js";

/**
 * The gRPC metadata that names one call of a JAX job on every member's stream: each member
 * waits at a barrier of that name for the others before it runs the function, so a call that
 * one member refused runs on none (python/colocated_wire/worker/job.py).
 */
export const CALL_ID_KEY = "colocated-call-id";

/** A new call id: the same on every member's stream of one call, a new one per call. */
export function newCallId(): string {
  return randomUUID();
}

/** A call's metadata: its id, when it is one call of a job. */
export function callMetadata(callId: string | undefined): Metadata {
  const metadata = new Metadata();
  if (callId !== undefined) metadata.set(CALL_ID_KEY, callId);
  return metadata;
}
