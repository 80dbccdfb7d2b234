import { ValueObject } from "./value-key";

/** A device, known on the wire only by its global integer id. */
export class Device extends ValueObject {
  constructor(readonly id: number) {
    super();
  }

  protected computeKey(): string {
    return `Device(${this.id})`;
  }
}

/** An ordered list of devices by global id, like JAX's DeviceList. */
export class DeviceList extends ValueObject {
  readonly ids: readonly number[];

  constructor(ids: Iterable<number | Device>) {
    super();
    this.ids = Object.freeze(Array.from(ids, (d) => (typeof d === "number" ? d : d.id)));
  }

  /** The number of devices. */
  get size(): number {
    return this.ids.length;
  }

  /** The devices, in order. */
  get devices(): Device[] {
    return this.ids.map((id) => new Device(id));
  }

  protected computeKey(): string {
    return `DeviceList(${this.ids.join(",")})`;
  }
}
