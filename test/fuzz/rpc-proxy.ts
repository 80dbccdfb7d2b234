import {
  Client,
  type ClientDuplexStream,
  credentials,
  type Metadata,
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type ServiceError,
  type sendUnaryData,
  status,
} from "@grpc/grpc-js";
import { ColocatedWorkerServiceService } from "../../gen/ts/colocated/v1/service";

/** One call as it crossed the proxy: its method, and every message each way, as bytes. */
export interface RecordedCall {
  path: string;
  requestStream: boolean;
  requests: Buffer[];
  responses: Buffer[];
}

/** What the proxy does to a worker's answer: the bytes to send on, or null to send none. */
export type ResponseFilter = (path: string, index: number, bytes: Buffer) => Buffer | null;

const asIs = (b: Buffer) => b;

/** Every method of the service, from the generated definition. */
export const METHODS = Object.values(ColocatedWorkerServiceService).map((m) => ({
  path: m.path,
  requestStream: m.requestStream,
  responseStream: m.responseStream,
}));

/**
 * A gRPC server that forwards every ColocatedWorkerService method to `target` unread, keeping a
 * record of each call's messages: the RPC fuzz test records real calls through it, and, given a
 * `filter`, it is the worker whose answers a client meets changed.
 */
export class RecordingProxy {
  readonly calls: RecordedCall[] = [];
  private readonly server = new Server();
  private readonly upstream: Client;
  address = "";

  private constructor(
    target: string,
    /** What the proxy does to each answer; the tests change it from call to call. */
    public filter: ResponseFilter = (_p, _i, b) => b,
  ) {
    this.upstream = new Client(target, credentials.createInsecure(), {
      "grpc.max_receive_message_length": -1,
      "grpc.max_send_message_length": -1,
    });
    const handlers: Record<string, unknown> = {};
    const definition: Record<string, unknown> = {};
    for (const m of METHODS) {
      const name = m.path.split("/").pop() as string;
      definition[name] = {
        path: m.path,
        requestStream: m.requestStream,
        responseStream: m.responseStream,
        requestSerialize: asIs,
        requestDeserialize: asIs,
        responseSerialize: asIs,
        responseDeserialize: asIs,
      };
      handlers[name] = m.requestStream
        ? (call: ServerDuplexStream<Buffer, Buffer>) => this.stream(m.path, call)
        : (call: ServerUnaryCall<Buffer, Buffer>, done: sendUnaryData<Buffer>) =>
            this.unary(m.path, call, done);
    }
    // biome-ignore lint/suspicious/noExplicitAny: a definition built from the generated one
    this.server.addService(definition as any, handlers as any);
  }

  /** Starts a proxy to `target` on a free loopback port. */
  static async start(target: string, filter?: ResponseFilter): Promise<RecordingProxy> {
    const proxy = new RecordingProxy(target, filter);
    const port = await new Promise<number>((resolve, reject) =>
      proxy.server.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    proxy.address = `127.0.0.1:${port}`;
    return proxy;
  }

  /** The recorded calls of one method. */
  of(path: string): RecordedCall[] {
    return this.calls.filter((c) => c.path === path);
  }

  close(): void {
    this.upstream.close();
    this.server.forceShutdown();
  }

  private unary(path: string, call: ServerUnaryCall<Buffer, Buffer>, done: sendUnaryData<Buffer>) {
    const record: RecordedCall = {
      path,
      requestStream: false,
      requests: [call.request],
      responses: [],
    };
    this.calls.push(record);
    const deadline = call.getDeadline();
    this.upstream.makeUnaryRequest(
      path,
      asIs,
      asIs,
      call.request,
      forwarded(call.metadata),
      { deadline },
      (error, response) => {
        if (error || response === undefined) return done(error ?? internal("no response"));
        record.responses.push(response);
        const sent = this.filter(path, 0, response);
        if (sent === null) done(internal("the proxy dropped the response"));
        else done(null, sent);
      },
    );
  }

  private stream(path: string, call: ServerDuplexStream<Buffer, Buffer>) {
    const record: RecordedCall = { path, requestStream: true, requests: [], responses: [] };
    this.calls.push(record);
    const up: ClientDuplexStream<Buffer, Buffer> = this.upstream.makeBidiStreamRequest(
      path,
      asIs,
      asIs,
      forwarded(call.metadata),
      { deadline: call.getDeadline() },
    );
    call.on("data", (b: Buffer) => {
      record.requests.push(b);
      up.write(b);
    });
    call.on("end", () => up.end());
    call.on("cancelled", () => up.cancel());
    call.on("error", () => up.cancel());
    // A session is taken when its headers come (src/rpc/transports/worker-stream.ts): pass them on.
    up.on("metadata", (headers: Metadata) => call.sendMetadata(headers));
    let n = 0;
    up.on("data", (b: Buffer) => {
      record.responses.push(b);
      const sent = this.filter(path, n++, b);
      if (sent !== null) call.write(sent);
    });
    up.on("error", (e: ServiceError) => call.destroy(e));
    up.on("status", (s) => {
      if (s.code === status.OK) call.end(s.metadata);
    });
  }
}

function forwarded(metadata: Metadata): Metadata {
  const m = metadata.clone();
  for (const key of Object.keys(m.getMap())) {
    if (key.startsWith("grpc-") || key === "user-agent") m.remove(key);
  }
  return m;
}

function internal(details: string): Partial<ServiceError> {
  return { code: status.INTERNAL, details };
}
