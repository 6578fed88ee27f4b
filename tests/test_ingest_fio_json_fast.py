"""The fio JSON reader's fast paths give what its careful, value-by-value paths give.

`_copy_numbers` (numbers copied by a table of names), `_value_keyed_bins` (json+ bins in a few
passes) and `_percentile_fields` (percentile names per key list) exist for import speed;
each is checked against the slow code it stands in for, on the real fixtures' bins and on
generated values that take every branch (strings, bools, NaN, infinities, overflow)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from iolab.ingest import fio_json

DATA = Path(__file__).parent / "data"
JSON_FILES = sorted(f for d in DATA.glob("fio-*/out") for f in d.glob("*.json"))


def _fixture_bins() -> list[dict[str, Any]]:
    """Every `bins` object of the fixtures' latency stats (fio 2.x and 3.x json+)."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("bins"), dict):
                found.append(node["bins"])
            for child in node.values():
                walk(child)
        elif isinstance(node, list):
            for child in node:
                walk(child)

    for path in JSON_FILES:
        text = path.read_text()
        if "{" in text:
            try:
                walk(json.loads(text[text.index("{") :]))
            except json.JSONDecodeError:
                continue  # text after the document, or a deliberately broken file
    return found


def test_fixture_bins_take_the_fast_path_with_the_same_result() -> None:
    all_bins = _fixture_bins()
    index_keyed = [bins for bins in all_bins if "FIO_IO_U_PLAT_BITS" in bins]
    value_keyed = [bins for bins in all_bins if "FIO_IO_U_PLAT_BITS" not in bins]
    assert len(index_keyed) >= 10 and len(value_keyed) >= 10  # fio 2.x and 3.x are there
    for scale in (1.0, 1000.0):
        for bins in index_keyed:
            assert fio_json._bins(bins, scale) == fio_json._careful_bins(bins, scale)
        for bins in value_keyed:
            fast = fio_json._value_keyed_bins(bins, scale)
            careful = fio_json._careful_bins(bins, scale)
            assert fast is not None, "fio's own value-keyed bins must take the fast path"
            assert fast == careful and list(fast) == list(careful)


_KEYS = st.one_of(
    st.integers(min_value=-5, max_value=10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1", "1.0", "01", "nan", "inf", "-0", "1e400", "FIO_IO_U_PLAT_NR", "x"]),
)
_COUNTS = st.one_of(
    st.integers(min_value=-3, max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.sampled_from(["7", "x", None]),
)


@given(st.dictionaries(_KEYS, _COUNTS, max_size=12), st.sampled_from([1.0, 1000.0]))
@example({"1": 2, "1.0": 3, "750": 1}, 1.0)  # two keys, one value: the counts add up
@example({"2": 1, "1e306": 4}, 1000.0)  # a value beyond the doubles once in ns
def test_value_keyed_bins_is_the_careful_loop_or_declines(
    bins: dict[str, Any], scale: float
) -> None:
    fast = fio_json._value_keyed_bins(bins, scale)
    if fast is not None:
        careful = fio_json._careful_bins(bins, scale)
        assert fast == careful and list(fast) == list(careful)


def _outcome(run: Any) -> Any:
    try:
        return run()
    except OverflowError:  # an integer beyond the doubles: both raise it
        return "OverflowError"


_VALUES = st.one_of(
    st.integers(),
    st.integers(min_value=10**308, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.sampled_from(["12.5", " 3 ", "nan", "-inf", "1e400", "x", ""]),
    st.lists(st.integers(), max_size=2),
)


@given(st.dictionaries(st.sampled_from("abcdef"), _VALUES), st.sampled_from([1.0, 1000.0]))
def test_copy_numbers_is_the_per_value_helpers(source: dict[str, Any], scale: float) -> None:
    fields = tuple((key, f"m.{key}") for key in "abcdefg")

    def fast() -> dict[str, float]:
        metrics: dict[str, float] = {}
        fio_json._copy_numbers(source, fields, scale, metrics)
        return metrics

    def slow() -> dict[str, float]:
        metrics: dict[str, float] = {}
        for key, name in fields:
            number = fio_json._scaled(fio_json._num(source, key), scale)
            if number is not None:
                metrics[name] = number
        return metrics

    assert _outcome(fast) == _outcome(slow)


@given(st.lists(_KEYS, max_size=20, unique=True))
def test_percentile_fields_name_what_percentile_metric_names(keys: list[str]) -> None:
    prefix = "read.clat_ns"
    expected = [(k, fio_json._percentile_metric(prefix, k)) for k in keys]
    assert list(fio_json._percentile_fields(prefix, tuple(keys))) == [
        (k, name) for k, name in expected if name is not None
    ]
