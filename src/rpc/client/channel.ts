import {
  type ChannelCredentials,
  type ClientOptions,
  credentials,
  InterceptingCall,
  type Interceptor,
} from "@grpc/grpc-js";
import { RETRY_SERVICE_CONFIG } from "./retry-policy";

/** TLS to a worker. Every field is PEM text or bytes, as `readFileSync` gives them. */
export interface TlsOptions {
  /** The CA that signed the worker's certificate; the system's roots when absent. */
  ca?: Uint8Array | string;
  /** Mutual TLS: this client's certificate chain, which the worker's `--client-ca` signed. */
  cert?: Uint8Array | string;
  /** Mutual TLS: the private key of `cert`. */
  key?: Uint8Array | string;
}

/** gRPC per-message compression; "none" by default. */
export type Compression = "gzip" | "none";

/** How the channel to a worker is secured and whether its messages are compressed. */
export interface ChannelOptions {
  /** TLS, or mutual TLS with `cert` and `key`; plaintext when absent. */
  tls?: TlsOptions;
  /** Channel credentials made elsewhere (instead of `tls`); insecure by default. */
  credentials?: ChannelCredentials;
  /**
   * "gzip" asks the worker to compress its responses, which it does unless started with
   * `--compression none`, and sets gzip on requests. grpc-js 1.14 compresses only the first
   * request of a channel to a grpcio worker: it splits grpcio's `identity, deflate, gzip`
   * without trimming the spaces. The payload format itself stays uncompressed.
   */
  compression?: Compression;
  /**
   * Calls wait, within their deadline, while the channel connects or reconnects to the worker
   * (gRPC's wait-for-ready), instead of failing at once with UNAVAILABLE: a client started
   * before its worker, or whose worker restarts, loses no call to the gap. A worker that does
   * not come back then fails each call at its deadline rather than at once (a WorkerGroup
   * names such a member only then). Off by default.
   */
  waitForReady?: boolean;
}

/** The metadata key that asks the worker for compressed responses (worker/compression.py). */
export const COMPRESSION_METADATA = "colocated-compression";

/** grpc-js's number for gzip (its CompressionAlgorithms enum). */
const GZIP = 2;

/** The channel credentials the options ask for; throws TypeError on a half-given pair. */
export function channelCredentials(options: ChannelOptions): ChannelCredentials {
  const { tls } = options;
  if (tls && options.credentials) {
    throw new TypeError("give tls or credentials, not both");
  }
  if (!tls) return options.credentials ?? credentials.createInsecure();
  if ((tls.cert === undefined) !== (tls.key === undefined)) {
    throw new TypeError("mutual TLS needs both tls.cert and tls.key");
  }
  return credentials.createSsl(pem(tls.ca), pem(tls.key), pem(tls.cert));
}

/**
 * The HTTP/2 receive window a channel opens with. Node's default, 64 KiB, is grpc-js's too, and
 * it never grows it (grpcio's core grows its own from the bandwidth it sees): an output streamed
 * from a worker then waited for a window update every 64 KiB, and a 1 GiB array came back at a
 * fraction of the speed it went out.
 */
export const FLOW_CONTROL_WINDOW = 16 << 20;

/**
 * The client options for `compression` and `waitForReady`, merged over `base`, with a wide
 * receive window and the retry of calls the worker refused at admission (retry-policy.ts;
 * grpc-js 1.14 retries unless `grpc.enable_retries` is 0).
 */
export function channelOptions(options: ChannelOptions, base: ClientOptions = {}): ClientOptions {
  const compression = options.compression ?? "none";
  base = {
    "grpc-node.flow_control_window": FLOW_CONTROL_WINDOW,
    "grpc.service_config": JSON.stringify(RETRY_SERVICE_CONFIG),
    ...base,
  };
  if (compression !== "none" && compression !== "gzip") {
    throw new TypeError(`compression is "gzip" or "none", not ${JSON.stringify(compression)}`);
  }
  const interceptors = [
    ...(base.interceptors ?? []),
    ...(compression === "gzip" ? [askFor(compression)] : []),
    // grpc-js reads wait-for-ready from each call's metadata, not from the service config.
    ...(options.waitForReady ? [waitingForReady] : []),
  ];
  return {
    ...base,
    ...(compression === "gzip" ? { "grpc.default_compression_algorithm": GZIP } : {}),
    ...(interceptors.length ? { interceptors } : {}),
  };
}

/** Makes each call wait for the channel to be ready rather than fail while it connects. */
const waitingForReady: Interceptor = (options, nextCall) =>
  new InterceptingCall(nextCall(options), {
    start(metadata, listener, next) {
      metadata.setOptions({ ...metadata.getOptions(), waitForReady: true });
      next(metadata, listener);
    },
  });

/** Adds the metadata that asks the worker to compress its responses with `algorithm`. */
function askFor(algorithm: string): Interceptor {
  return (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, listener, next) {
        metadata.set(COMPRESSION_METADATA, algorithm);
        next(metadata, listener);
      },
    });
}

function pem(value: Uint8Array | string | undefined): Buffer | null {
  if (value === undefined) return null;
  if (typeof value === "string") return Buffer.from(value, "utf8");
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}
