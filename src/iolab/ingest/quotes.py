"""One result per run in a thread: the same output quoted again in replies is counted once.

A regression thread quotes a result at each reply level (`>`, `> >`, `>>>`); every copy reads
as a result, so a thread of two runs would otherwise give six.  Two results are the same run
when their tool and their headline figures — each direction's rate, bytes and run time, to
the digit printed — are equal and they stand at different quote depths: a quoted copy always
agrees, however the mail client re-wrapped it.  The same figures twice at one depth are
kept apart (someone pasted a run twice, or two coarse dd runs printed alike: nothing says
they are one).  The copies become one result at
the place of the first, captioned by the first copy that has a caption, with the figures of
the copy that kept the most metrics (a deeper, re-wrapped copy may have lost a percentile
row), and `quote_levels` lists the quote depth of every copy in text order.
"""

from __future__ import annotations

import re

from iolab.ingest import mail
from iolab.model.result import Result

# The figures that identify a run: rates, bytes moved and run times of each direction.
_HEADLINE = re.compile(
    r"(?:group\d+\.)?(?:read|write|trim|mixed)\.(?:iops|bw_bytes|io_bytes|runtime_ms)\Z"
)


def identity(result: Result) -> tuple[object, ...]:
    """What makes two results the same run (see the module docstring)."""
    headline = sorted((k, v) for k, v in result.metrics.items() if _HEADLINE.match(k))
    figures = headline or sorted(result.metrics.items())
    return (result.tool, len(result.jobs), tuple(figures))


def merge_copies(found: list[tuple[int, Result]], depths: list[int]) -> list[tuple[int, Result]]:
    """`found` (in text order) with quoted copies folded into their first occurrence;
    `depths[i]` is the quote depth of the line `found[i]` starts at."""
    groups: dict[tuple[object, ...], list[int]] = {}  # identity → indexes into out
    out: list[tuple[int, Result]] = []
    for (start, result), depth in zip(found, depths, strict=True):
        key = identity(result)
        place = next((i for i in groups.get(key, []) if depth not in out[i][1].quote_levels), None)
        if place is None:
            result.quote_levels = [depth]
            groups.setdefault(key, []).append(len(out))
            out.append((start, result))
            continue
        kept_start, kept = out[place]
        levels = [*kept.quote_levels, depth]
        caption = kept.caption if kept.caption is not None else result.caption
        if len(result.metrics) > len(kept.metrics):
            kept = result  # a copy that kept more of the output (unbroken percentile rows)
        kept.caption = caption
        kept.quote_levels = levels
        out[place] = (kept_start, kept)
    return out


def merge_partial(found: list[tuple[int, Result]], raw: list[str]) -> list[tuple[int, Result]]:
    """`found` (after merge_copies) with partial re-pastes folded into the fuller result: a
    result whose quoted lines (its start to the end of its quote level) all stand, in order
    and together, in the lines of another result of the same tool at another quote depth —
    someone quoted the first lines of a run and then pasted it whole (or the other way)."""
    if len(found) < 2 or not raw:
        return found
    blocks = [_block(raw, start) for start, _ in found]
    dropped: set[int] = set()
    for i, (start, result) in enumerate(found):
        for j, (other_start, other) in enumerate(found):
            if i == j or j in dropped or other.tool != result.tool:
                continue
            depth, other_depth = mail.quote_depth(raw[start]), mail.quote_depth(raw[other_start])
            small, big = blocks[i], blocks[j]
            if depth == other_depth or not small or len(small) >= len(big):
                continue
            if _contains(big, small):
                dropped.add(i)
                levels = other.quote_levels or [other_depth]
                other.quote_levels = [depth, *levels] if start < other_start else [*levels, depth]
                if other.caption is None:
                    other.caption = result.caption
                break
    return [item for k, item in enumerate(found) if k not in dropped]


def _block(raw: list[str], start: int) -> list[str]:
    """The result's lines from `start` while the quote depth stays, quote marks removed."""
    depth = mail.quote_depth(raw[start])
    out: list[str] = []
    for line in raw[start:]:
        if mail.quote_depth(line) != depth:
            break
        text = mail.unquote([line])[0].strip()
        if text:
            out.append(" ".join(text.split()))
    return out


def _contains(big: list[str], small: list[str]) -> bool:
    n = len(small)
    return any(big[k : k + n] == small for k in range(len(big) - n + 1))
