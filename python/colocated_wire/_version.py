# Written by scripts/sync-version.mjs from package.json's "version" (npm version runs it).
__version__ = "0.1.0"
