/** The schema's major version: the "v1" of the proto package. */
export const SCHEMA_MAJOR_VERSION = 1;

/** The newest minor version this library writes and fully understands. */
export const SCHEMA_MINOR_VERSION = 3;
