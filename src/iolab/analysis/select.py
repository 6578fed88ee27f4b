"""Sample selectors: the text a user writes to name one side of a comparison.

A selector is one or more terms joined by `/` (docs/compare.md):

    run:12  or  12                 the samples of run 12
    12:fsync                       run 12, variant fsync (= run:12/variant=fsync)
    variant=fsync                  a variant (of the run named elsewhere in the selector)
    label:baseline                 every run imported (or run) with that label
    label:"v5.10/ext4"             a label holding `/` (double quotes keep it one term)
    tag:kernel=6.1[,k=v...]        runs carrying these tags
    fs=xfs,writers=10              matrix cell filters (values compared as text)
    host=ssd-01                    the samples measured on one host (a fleet's, or run here)
    caption=w/o                    imported results with that caption (exact text; the
                                   term runs to the end of the selector, or quote it)

Terms combine with AND.  Parsing is pure; `resolve` asks the store and turns "nothing
matched" into a SelectorError that says what the store does hold.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from iolab.errors import SelectorError, StoreError
from iolab.model.sample import Sample
from iolab.store.reader import StoreReader

_KEY = re.compile(r"^[A-Za-z_][\w.:-]*$")
_RUN_VARIANT = re.compile(r"^(\d+):(.+)$")


@dataclass(frozen=True)
class Selector:
    """A parsed selector; `text` is what the user wrote (for reports and messages)."""

    text: str
    run_id: int | None = None
    label: str | None = None
    variant: str | None = None
    cell: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    host: str | None = None
    caption: str | None = None

    def with_filters(
        self, variant: str | None = None, cell: dict[str, str] | None = None
    ) -> Selector:
        """The same selector narrowed to a variant and/or more cell values."""
        parts = [self.text]
        if variant is not None:
            parts.append(f"variant={variant}")
        parts += [f"{k}={v}" for k, v in (cell or {}).items() if k not in self.cell]
        return Selector(
            text="/".join(parts),
            run_id=self.run_id,
            label=self.label,
            variant=variant if variant is not None else self.variant,
            cell={**self.cell, **(cell or {})},
            tags=dict(self.tags),
            host=self.host,
            caption=self.caption,
        )


def _pairs(text: str, where: str, selector: str) -> dict[str, str]:
    """`k=v,k=v` → dict; every key once, non-empty values."""
    out: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise SelectorError(f"selector {selector!r}: {where} {item!r} is not KEY=VALUE")
        if not _KEY.match(key):
            raise SelectorError(f"selector {selector!r}: {where} key {key!r} is not a name")
        if key in out:
            raise SelectorError(f"selector {selector!r}: {where} {key!r} given twice")
        out[key] = value
    return out


def _terms(source: str) -> list[str]:
    """Split at `/` outside double quotes, so `label:"v5.10/ext4"` stays one term; an
    unquoted `caption=` term runs to the end (captions hold `/`: `caption=w/o`)."""
    terms: list[str] = []
    current: list[str] = []
    quoted = False
    for char in source:
        if char == '"':
            quoted = not quoted
        term = "".join(current).lstrip()
        rest_is_caption = term.startswith("caption=") and not term.startswith('caption="')
        if char == "/" and not quoted and not rest_is_caption:
            terms.append("".join(current))
            current = []
        else:
            current.append(char)
    if quoted:
        raise SelectorError(f"selector {source!r}: a '\"' is not closed")
    terms.append("".join(current))
    return terms


def _unquote(value: str) -> str:
    """A name written in double quotes (to hold a `/`) without them."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return value[1:-1]
    return value


def parse_selector(text: str) -> Selector:
    """Parse selector text; SelectorError (one line) when it does not parse."""
    source = text.strip()
    if not source:
        raise SelectorError("empty selector")
    run_id: int | None = None
    label: str | None = None
    variant: str | None = None
    cell: dict[str, str] = {}
    tags: dict[str, str] = {}
    host: str | None = None
    caption: str | None = None

    def once(kind: str, old: object) -> None:
        if old is not None:
            raise SelectorError(f"selector {source!r}: {kind} given twice")

    for term in _terms(source):
        term = term.strip()
        if not term:
            raise SelectorError(f"selector {source!r}: empty term (two '/' in a row?)")
        head, colon, rest = term.partition(":")
        if term.isdigit():
            once("run", run_id)
            run_id = int(term)
        elif (m := _RUN_VARIANT.match(term)) is not None:
            once("run", run_id)
            once("variant", variant)
            run_id, variant = int(m.group(1)), m.group(2)
        elif colon and head == "run":
            once("run", run_id)
            if (m := _RUN_VARIANT.match(rest)) is not None:
                once("variant", variant)
                run_id, variant = int(m.group(1)), m.group(2)
            elif rest.isdigit():
                run_id = int(rest)
            else:
                raise SelectorError(f"selector {source!r}: run id {rest!r} is not a number")
        elif colon and head == "label":
            once("label", label)
            label = _unquote(rest)
            if not label:
                raise SelectorError(f"selector {source!r}: label: needs a name")
        elif colon and head == "tag":
            for key, value in _pairs(rest, "tag", source).items():
                if key in tags:
                    raise SelectorError(f"selector {source!r}: tag {key!r} given twice")
                tags[key] = value
        elif colon and head == "variant":
            once("variant", variant)
            variant = rest or None
        elif ("=" in term and term.split("=", 1)[0].strip() == "host") or (
            colon and head == "host"
        ):
            once("host", host)
            host = term.split("=" if "=" in term else ":", 1)[1].strip() or None
            if host is None:
                raise SelectorError(f"selector {source!r}: host= needs a name")
        elif "=" in term and term.split("=", 1)[0].strip() == "caption":
            once("caption", caption)
            caption = _unquote(term.split("=", 1)[1].strip())
            if not caption:
                raise SelectorError(f"selector {source!r}: caption= needs the caption's text")
        elif "=" in term and term.split("=", 1)[0].strip() == "variant":
            once("variant", variant)
            variant = term.split("=", 1)[1].strip() or None
            if variant is None:
                raise SelectorError(f"selector {source!r}: variant= needs a name")
        elif "=" in term:
            for key, value in _pairs(term, "cell filter", source).items():
                if key in cell:
                    raise SelectorError(f"selector {source!r}: cell filter {key!r} given twice")
                cell[key] = value
        else:
            raise SelectorError(
                f"selector {source!r}: cannot read {term!r} "
                "(expected run:ID, ID:VARIANT, label:NAME, tag:K=V, variant=NAME, host=NAME "
                "or K=V)"
            )
    if run_id is None and label is None and not tags:
        raise SelectorError(
            f"selector {source!r} names no run, label or tag (add run:ID, label:NAME or tag:K=V)"
        )
    return Selector(source, run_id, label, variant, cell, tags, host, caption)


def resolve(
    store: StoreReader,
    selector: Selector,
    *,
    histograms: bool = True,
    only: Sequence[str] | None = None,
) -> list[Sample]:
    """The ok samples a selector names (with their histogram bins unless `histograms` is
    false; only the metrics named in `only` when given); SelectorError when there are none."""
    if selector.run_id is not None:
        try:
            store.run(selector.run_id)
        except StoreError:
            raise SelectorError(
                f"selector {selector.text!r}: no run {selector.run_id} in the store"
            ) from None
    samples = store.samples(
        run_id=selector.run_id,
        label=selector.label,
        variant=selector.variant,
        cell=selector.cell or None,
        tags=selector.tags or None,
        host=selector.host,
        metrics=only,
        with_jobs=False,
        with_histograms=histograms,
    )
    if selector.caption is not None:
        captions = sorted({s.caption for s in samples if s.caption})
        samples = [s for s in samples if s.caption == selector.caption]
        if not samples:
            have = ", ".join(repr(c) for c in captions[:8]) or "none"
            raise SelectorError(
                f"selector {selector.text!r} selects no samples (captions there: {have})"
            )
    if not samples:
        raise SelectorError(
            f"selector {selector.text!r} selects no samples{_hint(store, selector)}"
        )
    return samples


def _hint(store: StoreReader, selector: Selector) -> str:
    """What the store holds near the selector, so the user can correct it."""
    if selector.run_id is not None:
        info = store.run(selector.run_id)
        if selector.variant is not None:
            variants = store.variants(selector.run_id)
            if selector.variant not in variants:
                known = ", ".join(variants) if variants else "none (an import)"
                return f" (run {selector.run_id} variants: {known})"
        if selector.cell:
            cells = store.cells(selector.run_id)
            keys = sorted({k for c in cells for k in c})
            return f" (run {selector.run_id} matrix dimensions: {', '.join(keys) or 'none'})"
        if info.n_samples == 0:
            return f" (run {selector.run_id} holds no samples)"
        if info.n_failed == info.n_samples:
            return f" (every sample of run {selector.run_id} failed)"
    if selector.label is not None and selector.label not in store.labels():
        labels = store.labels()
        shown = ", ".join(labels[:8]) + (" …" if len(labels) > 8 else "")
        return f" (labels in the store: {shown or 'none'})"
    return ""


__all__ = ["Selector", "parse_selector", "resolve"]
