"""A quoted partial re-paste is a copy of the fuller result: someone quotes the first lines of
a run ("With the patch: IOPS=…") and the run is then pasted whole, or the other way round.
(The thread below is written for this test in the layout such replies have.)"""

from __future__ import annotations

import pytest

from iolab.ingest.detect import parse_text

PARTIAL_FIRST = """\
Jens Axboe wrote:
>> With the patch:
>>
>> IOPS=10.04M, BW=4.90GiB/s, IOS/call=32/31
>> IOPS=10.05M, BW=4.91GiB/s, IOS/call=32/32
>
> That is nice, what does the whole run look like?

Here it is:

polled=1, fixedbufs=1, register_files=1, buffered=0, QD=128
Engine=io_uring, sq_ring=128, cq_ring=128
IOPS=10.04M, BW=4.90GiB/s, IOS/call=32/31
IOPS=10.05M, BW=4.91GiB/s, IOS/call=32/32
IOPS=10.06M, BW=4.91GiB/s, IOS/call=32/31
IOPS=10.02M, BW=4.89GiB/s, IOS/call=32/32
Exiting on timeout
Maximum IOPS=10.06M
"""


def test_a_quoted_partial_repaste_is_the_fuller_result() -> None:
    (result,) = parse_text(PARTIAL_FIRST, "thread")
    assert result.metrics["read.runtime_ms"] == 4000  # the whole run's four seconds
    assert result.metrics["read.iops_max"] == 10.06e6
    assert result.quote_levels == [2, 0]
    assert result.caption == "Here it is"


def test_a_partial_quote_of_a_whole_run_pasted_first() -> None:
    whole = PARTIAL_FIRST.split("Here it is:\n\n", 1)[1]
    reply = (
        "Before:\n\n"
        + whole
        + "\nOn Mon, Jane wrote:\n> IOPS=10.04M, BW=4.90GiB/s, IOS/call=32/31\n"
    )
    (result,) = parse_text(reply, "thread")
    assert result.quote_levels == [0, 1] and result.metrics["read.runtime_ms"] == 4000


@pytest.mark.parametrize(
    "quoted",
    [
        ">> IOPS=9.01M, BW=4.40GiB/s, IOS/call=32/31\n"
        ">> IOPS=9.02M, BW=4.40GiB/s, IOS/call=32/32\n",
        # the same lines at the same depth are a second run someone pasted, not a quote
        "IOPS=10.04M, BW=4.90GiB/s, IOS/call=32/31\nIOPS=10.05M, BW=4.91GiB/s, IOS/call=32/32\n",
    ],
)
def test_other_runs_stay_results_of_their_own(quoted: str) -> None:
    text = "Without it:\n\n" + quoted + "\nWith it:\n\n" + PARTIAL_FIRST.split("Here it is:\n\n")[1]
    assert len(parse_text(text, "thread")) == 2
