// Written by scripts/sync-version.mjs from package.json's "version" (npm version runs it).
/** This package's version, as package.json says it. */
export const PACKAGE_VERSION = "0.1.0";
