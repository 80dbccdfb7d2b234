"""Schema version written in every payload's Header.

The major version is the proto package (`colocated.v1`); the minor version
counts additions an older reader can carry through without understanding.
"""

SCHEMA_MAJOR_VERSION = 1
SCHEMA_MINOR_VERSION = 3
