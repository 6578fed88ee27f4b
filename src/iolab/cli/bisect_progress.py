"""`iolab bisect`'s progress lines on stderr.  Apart from cli/bisect_cmd.py because it
subclasses the session's `Progress`, and the session loads numpy and SQLAlchemy, which
`iolab bisect --help` must not (the command imports this module when it runs)."""

from __future__ import annotations

from rich.console import Console

from iolab.bisect.session import Progress, Session
from iolab.builds.builder import BuildRecord
from iolab.model.bisect import Measure


class ConsoleProgress(Progress):
    """The bisect's progress lines, on standard error (the report goes to standard output)."""

    def __init__(self, quiet: bool, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True, soft_wrap=True)
        self.quiet = quiet

    def say(self, text: str) -> None:
        if not self.quiet:
            self.console.print(text, highlight=False, markup=False)

    def opened(self, session: Session) -> None:
        s = session.settings
        what = {"commits": "commits", "releases": "kernels", "kernel-commits": "kernel commits"}
        self.say(
            f"bisect run {session.run_id}: {len(s.arms) - 1} candidate {what[s.mode]}, "
            f"KPI {s.kpi}, seed {session.seed}"
            + (f", on fleet {s.fleet}" if s.fleet else "")
            + (f" (blocks 1-{session.replayed} replayed)" if session.replayed else "")
        )

    def building(self, session: Session, name: str) -> None:
        self.say(f"preparing {session.label(name)}")

    def built(self, session: Session, name: str, build: BuildRecord) -> None:
        if not build.ok:
            self.say(f"{session.label(name)} is unbuildable: {build.reason}")
        elif build.release is not None:
            how = "cached" if build.cached else "built"
            self.say(f"{session.label(name)} {how}: kernel {build.release}")

    def block(self, session: Session, block: int, measure: Measure) -> None:
        names = " ".join(session.label(session.name(i)) for i in measure.arms)
        self.say(f"block {block} · {measure.phase} · {names}")

    def step(self, session: Session) -> None:
        s = session.engine.records[-1]
        name = session.label(session.name(s.index))
        self.say(f"step {s.step}: {name} graded {s.verdict} after {s.blocks} blocks")
