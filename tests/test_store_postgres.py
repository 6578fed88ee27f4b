"""PostgreSQL specifics: the same schema as SQLite, and UTC whatever the session's zone.

The backend-independent suite (tests/test_store.py) runs on PostgreSQL too; these tests
compare the two backends with each other.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, inspect, make_url

from iolab.model.sample import Sample
from iolab.store import open_store
from store_backends import pg_schema_location

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_location() -> Iterator[str]:
    yield from pg_schema_location()


def _type_family(column_type: Any) -> str:
    """The generic kind of a reflected column type (backends name them differently)."""
    name = type(column_type).__name__.upper()
    for family in (
        "BIGINT",
        "INT",
        "CHAR",
        "TEXT",
        "TIMESTAMP",
        "DATETIME",
        "JSON",
        "FLOAT",
        "DOUBLE",
        "REAL",
    ):
        if family in name:
            return {
                "DATETIME": "TIMESTAMP",
                "DOUBLE": "FLOAT",
                "REAL": "FLOAT",
                "INT": "INTEGER",
            }.get(family, family)
    return name


def _shape(engine: Engine) -> dict[str, Any]:
    insp = inspect(engine)
    shape: dict[str, Any] = {}
    for table in sorted(insp.get_table_names()):
        columns = [
            (c["name"], _type_family(c["type"]), getattr(c["type"], "length", None), c["nullable"])
            for c in insp.get_columns(table)
        ]
        pk = insp.get_pk_constraint(table)
        fks = sorted(
            (
                fk["name"],
                tuple(fk["constrained_columns"]),
                fk["referred_table"],
                tuple(fk["referred_columns"]),
                (fk.get("options") or {}).get("ondelete"),
            )
            for fk in insp.get_foreign_keys(table)
        )
        indexes = sorted(
            (ix["name"], tuple(ix["column_names"]), bool(ix["unique"]))
            for ix in insp.get_indexes(table)
        )
        shape[table] = {
            "columns": columns,
            "pk": (pk["name"], tuple(pk["constrained_columns"])),
            "fks": fks,
            "indexes": indexes,
        }
    return shape


def test_same_schema_on_sqlite_and_postgres(pg_location: str, tmp_path: Path) -> None:
    with open_store(str(tmp_path / "s.db")) as lite, open_store(pg_location) as pg:
        lite_shape, pg_shape = _shape(lite.engine), _shape(pg.engine)
    assert set(lite_shape) == {
        "runs",
        "run_tags",
        "samples",
        "metrics",
        "histograms",
        "regressions",
        "regression_events",
        "regression_keys",
        "fleet_hosts",
        "block_attempts",
        "run_cancels",
        "iolab_schema_version",
    }
    assert lite_shape == pg_shape


def test_timestamps_are_utc_whatever_the_session_zone(pg_location: str) -> None:
    url = make_url(pg_location)
    options = url.query["options"]
    assert isinstance(options, str)
    zoned = url.update_query_dict({"options": f"{options} -ctimezone=America/New_York"})
    started = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    with open_store(zoned.render_as_string(hide_password=False)) as store:
        run_id = store.create_run("lab")
        store.add_sample(
            Sample(run_id=run_id, started_at=started, finished_at=started + timedelta(seconds=1))
        )
        [sample] = store.samples(run_id=run_id)
        run = store.run(run_id)
    assert sample.started_at == started and sample.started_at.utcoffset() == timedelta(0)
    assert run.created_at.utcoffset() == timedelta(0)
    assert abs(datetime.now(UTC) - run.created_at) < timedelta(minutes=5)
