"""Errors a user can cause, each mapped to one documented exit code (docs/exit-codes.md).

The CLI prints `iolab: <message>` on one line and exits with `exit_code`; nothing else
in the package prints or exits.
"""

from __future__ import annotations

# Exit codes shared by every command.  Keep docs/exit-codes.md in step.
EXIT_OK = 0
EXIT_INTERNAL = 1  # a bug in iolab: the only case that shows a traceback (with IOLAB_DEBUG=1)
EXIT_BAD_INPUT = 2  # unreadable / unrecognised / invalid input file, plan, selector or option
EXIT_REFUSED = 3  # a safety rule refused to touch the machine (mounted device, root disk, ...)
EXIT_LAB_FAILED = 4  # the lab could not run (missing tool, kernel refused a setting)
EXIT_INTERRUPTED = 5  # Ctrl-C / SIGTERM: the machine was restored, finished samples are kept
# compare / ab in --ci mode
EXIT_REGRESSION = 10  # at least one KPI regressed
EXIT_INCONCLUSIVE = 11  # no KPI regressed but at least one has no verdict yet
# bisect: found exits 0
EXIT_BISECT_RANGE = 20  # the first bad commit is one of a range (unbuildable or undecided)
EXIT_BISECT_NO_REGRESSION = 21  # the ends do not differ (or bad is better): no culprit
EXIT_BISECT_NOT_KNOWN = 22  # not enough evidence (ends undecided, culprit not reproduced)


class IolabError(Exception):
    """Base of every error that reaches the user as one line and an exit code."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class IngestError(IolabError):
    """An input that is not a result iolab can read: names the source and what is wrong."""

    def __init__(self, source: str, message: str) -> None:
        super().__init__(f"{source}: {message}")
        self.source = source
        self.reason = message

    def __reduce__(self) -> tuple[type[IngestError], tuple[str, str]]:
        """Pickled as (source, message): files parsed in a second process (ingest.background)
        raise their error in the one that reports it."""
        return (type(self), (self.source, self.reason))


class NoIOError(IngestError):
    """A result in which no job did any I/O: a failure of a measurement, but what a
    preparation step such as fio's `create_only=1` pre-pass does by design."""


class PlanError(IolabError):
    """An invalid plan file; the message points at the key and its line."""


class SelectorError(IolabError):
    """A sample selector that does not parse or selects nothing."""


class StoreError(IolabError):
    """The results store cannot be opened or is not an iolab store."""


class RefusedError(IolabError):
    """A safety rule refused an operation on the machine."""

    exit_code = EXIT_REFUSED


class LabError(IolabError):
    """The lab could not do what the plan asks (missing tool, setting refused)."""

    exit_code = EXIT_LAB_FAILED
