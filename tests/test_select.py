"""Selector syntax: what parses to what, and one-line errors for what does not."""

from __future__ import annotations

import pytest

from iolab.analysis.select import Selector, parse_selector
from iolab.errors import SelectorError


@pytest.mark.parametrize(
    ("text", "run", "label", "variant", "cell", "tags"),
    [
        ("12", 12, None, None, {}, {}),
        ("run:12", 12, None, None, {}, {}),
        ("12:fsync", 12, None, "fsync", {}, {}),
        ("run:12:fsync", 12, None, "fsync", {}, {}),
        ("run:12/variant=fsync", 12, None, "fsync", {}, {}),
        ("run:12/variant:fsync", 12, None, "fsync", {}, {}),
        ("label:baseline", None, "baseline", None, {}, {}),
        ("label:v6.1-rc2", None, "v6.1-rc2", None, {}, {}),
        ("tag:kernel=6.1", None, None, None, {}, {"kernel": "6.1"}),
        ("tag:kernel=6.1,host=box", None, None, None, {}, {"kernel": "6.1", "host": "box"}),
        ("12:fsync/fs=xfs,writers=10", 12, None, "fsync", {"fs": "xfs", "writers": "10"}, {}),
        ("12/fs=xfs/writers=10", 12, None, None, {"fs": "xfs", "writers": "10"}, {}),
        ("label:old/tag:kernel=6.1", None, "old", None, {}, {"kernel": "6.1"}),
        (" 7:a ", 7, None, "a", {}, {}),
        ('label:"v5.10/ext4"', None, "v5.10/ext4", None, {}, {}),
        ('label:"a/b/c"/tag:kernel=6.1', None, "a/b/c", None, {}, {"kernel": "6.1"}),
    ],
)
def test_parses(
    text: str,
    run: int | None,
    label: str | None,
    variant: str | None,
    cell: dict[str, str],
    tags: dict[str, str],
) -> None:
    sel = parse_selector(text)
    assert (sel.run_id, sel.label, sel.variant, sel.cell, sel.tags) == (
        run,
        label,
        variant,
        cell,
        tags,
    )
    assert sel.text == text.strip()


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty selector"),
        ("run:x", "not a number"),
        ("12/13", "run given twice"),
        ("12:a/variant=b", "variant given twice"),
        ("label:", "needs a name"),
        ("label:a/label:b", "label given twice"),
        ("12/fs=", "not KEY=VALUE"),
        ("12/fs=a,fs=b", "given twice"),
        ("12/=a", "not KEY=VALUE"),
        ("12/9x=a", "is not a name"),
        ("12//fs=a", "empty term"),
        ("fs=xfs", "names no run, label or tag"),
        ("12/what", "cannot read 'what'"),
        ("tag:kernel", "not KEY=VALUE"),
        ('label:"v5.10/ext4', "is not closed"),
        ('label:""', "needs a name"),
    ],
)
def test_bad_selectors(text: str, fragment: str) -> None:
    with pytest.raises(SelectorError) as info:
        parse_selector(text)
    message = info.value.message
    assert fragment in message and "\n" not in message


def test_narrowing_keeps_the_text_readable() -> None:
    sel = parse_selector("run:3").with_filters(variant="b", cell={"fs": "xfs"})
    assert sel == Selector("run:3/variant=b/fs=xfs", run_id=3, variant="b", cell={"fs": "xfs"})
