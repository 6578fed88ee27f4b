"""Alembic migrations of the store, shipped inside the package (run by iolab.store.migrate)."""
