"""Re-implementations of other tools' change rules, for the side-by-side validation in bench/.

Each module restates one rule from reading the tool's source (cited in its docstring); none
copies code.  Every rule takes the samples of A (base) and B (new) and answers with
"regression", "improvement", "no change" or, where the tool has it, "inconclusive", for a
higher-is-better metric unless told otherwise.
"""

from __future__ import annotations

from typing import Literal

Outcome = Literal["regression", "improvement", "no change", "inconclusive"]


def directional(b_higher: bool, higher_is_better: bool) -> Outcome:
    return "improvement" if b_higher == higher_is_better else "regression"
