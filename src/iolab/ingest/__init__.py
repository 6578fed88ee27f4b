"""Readers for every result form users paste: fio JSON/json+/terse/normal text (also quoted
in mail), xfs_io and dd summaries.  Pure functions: text in, Results out, or IngestError."""

from iolab.ingest.detect import parse_text, read_source

__all__ = ["parse_text", "read_source"]
