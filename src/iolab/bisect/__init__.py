"""Bisection under noise: which commit changed a KPI, or an honest range / "not known".

Pure (no I/O): `engine.Bisection` is a state machine the session (`session`, every mode:
commits, kernel releases, kernel commits) and the simulation both run; `search` chooses
queries; `step` grades one candidate against both ends.
"""

from iolab.bisect.engine import Bisection, Settings, step_alpha
from iolab.model.bisect import GOOD, Measure, Outcome, StepRecord, TestSummary

__all__ = [
    "GOOD",
    "Bisection",
    "Measure",
    "Outcome",
    "Settings",
    "StepRecord",
    "TestSummary",
    "step_alpha",
]
