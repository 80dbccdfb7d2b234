import { once } from "node:events";
import { Client, Metadata, type ServiceError } from "@grpc/grpc-js";
import { type Compression, channelCredentials, channelOptions } from "../../src/rpc/client/channel";

/** What bench/load/load_echo.py serves: bytes in, the same bytes out. */
const UNARY = "/colocated.bench.Echo/Echo";
const STREAM = "/colocated.bench.Echo/EchoStream";
const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

const asBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
const same = (b: Buffer) => b;

/** A grpc-js client of the echo server, on a channel configured as the worker client's is. */
export class EchoClient {
  private readonly client: Client;

  constructor(target: string, compression: Compression) {
    const base = {
      "grpc.max_receive_message_length": MAX_MESSAGE_BYTES,
      "grpc.max_send_message_length": MAX_MESSAGE_BYTES,
    };
    this.client = new Client(target, channelCredentials({}), channelOptions({ compression }, base));
  }

  /** One unary echo; resolves with the bytes that came back. */
  echo(bytes: Uint8Array): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        UNARY,
        asBuffer,
        same,
        bytes,
        new Metadata(),
        {},
        (error: ServiceError | null, answer?: Buffer) => {
          if (error || !answer) reject(error ?? new Error("no answer"));
          else resolve(answer);
        },
      );
    });
  }

  /** Streams `bytes` in chunks of `chunkBytes` and reads them back; resolves with the count. */
  async echoStream(bytes: Uint8Array, chunkBytes: number): Promise<number> {
    const stream = this.client.makeBidiStreamRequest(STREAM, asBuffer, same, new Metadata(), {});
    let received = 0;
    stream.on("data", (chunk: Buffer) => {
      received += chunk.length;
    });
    const ended = new Promise<void>((resolve, reject) => {
      stream.on("error", reject);
      stream.on("end", resolve);
    });
    for (let at = 0; at < bytes.length; at += chunkBytes) {
      if (!stream.write(bytes.subarray(at, at + chunkBytes))) await once(stream, "drain");
    }
    stream.end();
    await ended;
    return received;
  }

  close(): void {
    this.client.close();
  }
}
