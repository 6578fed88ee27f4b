"""Property tests: every reader either returns results or raises IngestError — never another
exception — and every number it returns is finite.  Inputs are arbitrary text, and real
fixtures cut, spliced, quoted and with numbers replaced by junk (where parsers break)."""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolab.errors import IngestError
from iolab.model.result import Result

DATA = Path(__file__).parent / "data"
Reader = Callable[[str, str], list[Result]]


def _module(name: str) -> Any:
    """The reader module if it exists in this checkout (readers land one by one)."""
    if importlib.util.find_spec(f"iolab.ingest.{name}") is None:
        return None
    return importlib.import_module(f"iolab.ingest.{name}")


def _readers() -> dict[str, Reader]:
    readers: dict[str, Reader] = {}
    fio_json = _module("fio_json")
    if fio_json is not None:
        readers["fio_json"] = fio_json.parse
    for name in ("fio_terse", "fio_text", "xfs_io", "dd", "io_uring", "case_rows"):
        module = _module(name)
        if module is not None:
            readers[name] = _line_reader(module)
    detect = _module("detect")
    if detect is not None:
        readers["detect"] = detect.parse_text
    return readers


def _line_reader(module: Any) -> Reader:
    def read(text: str, source: str) -> list[Result]:
        found = module.find(text.splitlines(), source)
        assert isinstance(found, list)
        for item in found:
            assert isinstance(item, tuple) and isinstance(item[0], int)
        return [result for _, result in found]

    return read


READERS = _readers()
NAMES = sorted(READERS)


def _samples() -> list[str]:
    """Real outputs of every kind (first 30k characters each: enough structure, fast)."""
    files = sorted(
        f
        for f in DATA.rglob("*")
        if f.is_file()
        and f.suffix in (".txt", ".json", ".eml")
        and f.name not in ("generated.txt", "README.txt")
    )
    # a spread over every directory (fio versions, dd, xfs_io, mail), not all 300 files
    by_dir: dict[Path, list[Path]] = {}
    for f in files:
        by_dir.setdefault(f.parent, []).append(f)
    picked = [f for group in by_dir.values() for f in group[:: max(1, len(group) // 8)]]
    return [f.read_text(errors="replace")[:30_000] for f in picked]


SAMPLES = _samples()
JUNK = st.sampled_from(
    ["", "nan", "-nan", "inf", "-1", "1e309", "0", "k", "99999999999999999999", "%", ";", "=",
     "{", "}", "[", '"', "\\", "\x00", "é", "1.2.3", "0x1f", " ", "\n"]
)  # fmt: skip
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def check(results: Any) -> None:
    assert isinstance(results, list)
    for result in results:
        assert isinstance(result, Result)
        for name, value in result.metrics.items():
            assert isinstance(value, float | int) and math.isfinite(value), (name, value)
        for job in result.jobs:
            for name, value in job.metrics.items():
                assert isinstance(value, float | int) and math.isfinite(value), (name, value)


def run(name: str, text: str) -> None:
    try:
        results = READERS[name](text, "prop")
    except IngestError as exc:
        assert str(exc).startswith("prop: ") and exc.reason
        return
    check(results)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SAMPLES))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["cut", "delete", "insert", "number", "quote", "lines"]))
        at = draw(st.integers(0, len(text)))
        if op == "cut":
            text = text[:at]
        elif op == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 400)) :]
        elif op == "insert":
            text = text[:at] + draw(st.text(max_size=40) | JUNK) + text[at:]
        elif op == "number":
            numbers = list(_NUMBER.finditer(text))
            if numbers:
                hit = numbers[draw(st.integers(0, len(numbers) - 1))]
                text = text[: hit.start()] + draw(JUNK) + text[hit.end() :]
        elif op == "quote":
            prefix = draw(st.sampled_from(["> ", ">> ", "> > ", ">"]))
            text = "\n".join(prefix + line for line in text.splitlines())
        else:
            lines = text.splitlines()
            text = "\n".join(draw(st.permutations(lines)) if len(lines) < 200 else lines[::-1])
    return text


def _terse_fields() -> st.SearchStrategy[str]:
    field = st.one_of(
        st.integers(-5, 10**7).map(str),
        st.floats(allow_nan=False, allow_infinity=False, width=32).map(lambda f: f"{f:f}"),
        st.floats(0, 100).map(lambda f: f"{f:.2f}%"),
        st.floats(0, 100).map(lambda f: f"{f:f}%=" + str(int(f * 1000))),
        JUNK,
    )
    return st.builds(
        lambda version, fields: ";".join([str(version), "fio-3.33", "job", "0", "0", *fields]),
        st.integers(1, 6),
        st.lists(field, min_size=70, max_size=200),
    )


def _json_documents() -> st.SearchStrategy[str]:
    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
    values = st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner),
        max_leaves=20,
    )
    direction = st.fixed_dictionaries(
        {},
        optional={
            k: values | st.integers(0, 10**9)
            for k in ("io_bytes", "io_kbytes", "bw", "bw_bytes", "iops", "runtime", "total_ios")
        }
        | {k: st.dictionaries(st.sampled_from(["min", "max", "mean", "N", "percentile",
                                                "bins"]), values)
           for k in ("clat_ns", "lat_ns", "clat", "slat")},
    )  # fmt: skip
    job = st.fixed_dictionaries(
        {"jobname": st.text(max_size=8) | values},
        optional={"read": direction, "write": direction, "sync": values, "error": values,
                  "groupid": values, "job options": values, "usr_cpu": values},
    )  # fmt: skip
    document = st.fixed_dictionaries(
        {"fio version": st.sampled_from(["fio-3.33", "fio-2.16", "fio-2.2.10", "x"]) | values},
        optional={"jobs": st.lists(job | values, max_size=3), "client_stats": values,
                  "disk_util": values, "global options": values},
    )  # fmt: skip
    return document.map(lambda doc: json.dumps(doc, indent=2, allow_nan=True))


PROPERTY = settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def test_readers_found() -> None:
    assert {"fio_json", "fio_terse"} <= set(READERS)


@pytest.mark.parametrize("name", NAMES)
@PROPERTY
@given(text=st.text(max_size=3000))
def test_any_text(name: str, text: str) -> None:
    run(name, text)


@pytest.mark.parametrize("name", NAMES)
@PROPERTY
@given(text=mutated())
def test_mutated_real_outputs(name: str, text: str) -> None:
    run(name, text)


@pytest.mark.parametrize("name", NAMES)
@PROPERTY
@given(text=_terse_fields())
def test_terse_like_lines(name: str, text: str) -> None:
    run(name, text)


@pytest.mark.parametrize("name", NAMES)
@PROPERTY
@given(text=_json_documents(), prefix=st.sampled_from(["", "fio: pid=1, err=5\n"]))
def test_json_like_documents(name: str, text: str, prefix: str) -> None:
    run(name, prefix + text)


@pytest.mark.parametrize("name", NAMES)
def test_real_outputs_unchanged(name: str) -> None:
    """The unmutated samples too (a reader may refuse what is not its format)."""
    for text in SAMPLES:
        run(name, text)


def test_number_helpers() -> None:
    numbers = _module("numbers")
    assert numbers is not None

    @PROPERTY
    @given(st.text(max_size=20) | JUNK)
    def each(text: str) -> None:
        for helper in (numbers.parse_count, numbers.parse_size, numbers.parse_rate,
                       numbers.parse_percent, numbers.parse_float):  # fmt: skip
            try:
                value = helper(text)
            except ValueError:
                continue
            assert math.isfinite(value)

    each()
    assert numbers.parse_count("96.3k") == pytest.approx(96300)
    assert numbers.parse_count("2666.0k") == pytest.approx(2_666_000)
    assert numbers.parse_size("138GiB") == 138 * 1024**3
    assert numbers.parse_size("148GB") == 148e9
    assert numbers.parse_size("431280KB", legacy_units=True) == 431280 * 1024
    assert numbers.parse_rate("7186.3KB/s", legacy_units=True) == pytest.approx(7186.3 * 1024)
    assert numbers.parse_rate("247MB/s") == 247e6
    assert numbers.parse_percent("47.79%") == 47.79
    assert numbers.parse_version("fio-2.2.10") == (2, 2, 10) < (2, 21, 0)
    assert numbers.tool_version("fio-3.33") == "3.33"
