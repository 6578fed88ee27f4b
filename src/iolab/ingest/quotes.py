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
