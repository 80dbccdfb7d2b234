import { ColocatedWorkerServiceService as Service } from "../../../gen/ts/colocated/v1/service";

/**
 * The methods gRPC retries when the worker refuses them at admission (RESOURCE_EXHAUSTED: its
 * call or byte limit, or gRPC's own "Concurrent RPC limit exceeded!"). The worker refuses
 * before it reads the program or runs anything, so a refused call left nothing behind, and
 * these four are unary: grpc-js keeps the request and sends it again. ExecuteSharded is not
 * retried: grpc-js would have to keep every chunk written to replay the stream, it stops
 * keeping them past its retry buffer (1 MiB), so whether a refused stream came back would
 * depend on the size of its inputs; and the worker also refuses a stream midway (bytes
 * beyond its limit), after it has read part of it. Nor is Session: it lives for many calls,
 * and refuses each on its own, in the stream (a WorkerGroup whose session a worker refuses
 * calls by ExecuteSharded).
 */
export const RETRIED_METHODS = [
  Service.getVersion,
  Service.getTopology,
  Service.loadProgram,
  Service.execute,
].map((m) => m.path);

/**
 * gRPC's retry policy (gRFC A6) for them: up to 5 attempts, after 0.2, 0.4, 0.8 and 1.6 s
 * (each jittered by ±20%; 3 s in all), always within the call's deadline. Only a refusal
 * that came before the worker's answer began is retried: grpc-js commits a call once the
 * worker's headers arrive, or once its request outgrows the retry buffer (1 MiB per call,
 * 16 MiB per channel), and then passes any status on as it is.
 */
export const RETRY_POLICY = {
  maxAttempts: 5,
  initialBackoff: "0.2s",
  maxBackoff: "2s",
  backoffMultiplier: 2,
  retryableStatusCodes: ["RESOURCE_EXHAUSTED"],
} as const;

/** The `grpc.service_config` of a channel to a worker: the retry policy on RETRIED_METHODS. */
export const RETRY_SERVICE_CONFIG = {
  methodConfig: [
    {
      name: RETRIED_METHODS.map((path) => {
        const [, service, method] = path.split("/"); // "/colocated.v1.Service/Method"
        return { service, method };
      }),
      retryPolicy: RETRY_POLICY,
    },
  ],
};
