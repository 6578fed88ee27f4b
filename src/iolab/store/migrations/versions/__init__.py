"""One module per schema revision; alembic finds them by their `revision` attribute."""
