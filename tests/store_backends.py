"""Store locations for tests: a SQLite file, and a PostgreSQL schema of its own per test.

The postgres location is skipped only when IOLAB_TEST_PG_URL is unset; `make test`
(scripts/run-tests) always starts a real server and sets it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url, text

PG_ENV = "IOLAB_TEST_PG_URL"
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def pg_url_or_skip() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.skip(f"{PG_ENV} is not set (scripts/run-tests starts a PostgreSQL server)")
    return url


def pg_schema_location() -> Iterator[str]:
    """A URL whose connections use a fresh schema, dropped again afterwards."""
    base = pg_url_or_skip()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(base)
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()


def location_for(backend: str, tmp_path: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield str(tmp_path / "store" / "iolab.db")
    else:
        yield from pg_schema_location()
