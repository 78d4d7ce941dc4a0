"""Reports: one JSON document per run, validated against the shipped schema."""

from .document import SCHEMA_VERSION, Report, load_schema, validate
from .sections import environment
from .files import write_atomic, write_witness

__all__ = ["SCHEMA_VERSION", "Report", "environment", "load_schema", "validate", "write_atomic", "write_witness"]
