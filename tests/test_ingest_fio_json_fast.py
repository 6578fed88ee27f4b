"""The fio JSON reader's fast paths give what its careful, value-by-value paths give.

`_copy_numbers` (numbers copied by a table of names), `_value_keyed_bins` (json+ bins in a few
passes) and `_percentile_fields` (percentile names per key list) exist for import speed;
each is checked against the slow code it stands in for, on the real fixtures' bins and on
generated values that take every branch (strings, bools, NaN, infinities, overflow)."""

from __future__ import annotations

import json
import math
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


def _fios_form(bins: dict[str, Any], scale: float) -> bool:
    """What the fast path promises to take, said independently of it: keys that are finite
    values >= 0 (also once scaled, also summed), counts that are positive ints, and no two
    keys naming one value."""
    try:
        values = [float(key) for key in bins]
    except ValueError:
        return False
    if not all(type(c) is int and c > 0 for c in bins.values()):
        return False
    if not all(0 <= v < math.inf and v * scale < math.inf for v in values):
        return False
    return sum(values) < math.inf and len({v * scale for v in values}) == len(values)


def _check_value_keyed(bins: dict[str, Any], scale: float) -> bool:
    """The fast path is taken exactly on fio's form, and then equals the careful loop;
    whether it compared."""
    fast = fio_json._value_keyed_bins(bins, scale)
    assert (fast is not None) == _fios_form(bins, scale), (bins, scale, fast)
    if fast is None:
        return False
    careful = fio_json._careful_bins(bins, scale)
    assert fast == careful and list(fast) == list(careful)
    return True


# fio's own form, with its edges: ns and µs scales, values near the doubles' end, "-0",
# keys that are floats (fio writes integers, a hand-edited file may not)
_FIO_KEYS = st.one_of(
    st.integers(min_value=0, max_value=10**12).map(str),
    st.floats(min_value=0.0, max_value=1e300).map(repr),
    st.sampled_from(["0", "-0", "0.5", "1e305", "1.7e305"]),
)


@given(
    st.dictionaries(_FIO_KEYS, st.integers(min_value=1, max_value=10**12), max_size=40),
    st.sampled_from([1.0, 1000.0]),
)
@example({"1000": 5, "2000": 3, "0": 1}, 1000.0)  # fio's everyday bins
@example({"-0": 2, "1e305": 1}, 1000.0)  # -0 is a value >= 0; 1e308 still a double
def test_value_keyed_bins_of_fios_form_equal_the_careful_loop(
    bins: dict[str, Any], scale: float
) -> None:
    assert _check_value_keyed(bins, scale) or not _fios_form(bins, scale)


def test_generated_bins_mostly_reach_the_comparison() -> None:
    """The strategy above is for comparing: most of its inputs take the fast path."""
    from hypothesis import settings

    compared = []

    @settings(max_examples=200, database=None)
    @given(
        st.dictionaries(_FIO_KEYS, st.integers(min_value=1, max_value=10**12), max_size=40),
        st.sampled_from([1.0, 1000.0]),
    )
    def count(bins: dict[str, Any], scale: float) -> None:
        compared.append(_check_value_keyed(bins, scale))

    count()
    assert sum(compared) >= 0.8 * len(compared), (sum(compared), len(compared))


@given(st.dictionaries(_KEYS, _COUNTS, max_size=12), st.sampled_from([1.0, 1000.0]))
@example({"1": 2, "1.0": 3, "750": 1}, 1.0)  # two keys, one value: the counts add up
@example({"2": 1, "1e306": 4}, 1000.0)  # a value beyond the doubles once in ns
@example({"5": 1, "7.5": True}, 1.0)  # a bool is no count of fio's
def test_value_keyed_bins_declines_exactly_what_is_not_fios_form(
    bins: dict[str, Any], scale: float
) -> None:
    _check_value_keyed(bins, scale)


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
