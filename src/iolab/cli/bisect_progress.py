"""`iolab bisect`'s progress lines on stderr.  Apart from cli/bisect_cmd.py because it
subclasses the driver's `Progress`, and the driver loads numpy and SQLAlchemy, which
`iolab bisect --help` must not (the command imports this module when it runs)."""

from __future__ import annotations

from rich.console import Console

from iolab.bisect import driver
from iolab.bisect.target import Prepared
from iolab.model.bisect import Measure


class ConsoleProgress(driver.Progress):
    def __init__(self, console: Console, quiet: bool) -> None:
        self.console, self.quiet = console, quiet

    def say(self, text: str) -> None:
        if not self.quiet:
            self.console.print(text, highlight=False, markup=False)

    def building(self, sha: str) -> None:
        self.say(f"preparing {sha[:12]}")

    def built(self, done: Prepared) -> None:
        if not done.ok:
            self.say(f"{done.sha[:12]} is unbuildable: {done.reason}")

    def block(self, block: int, measure: Measure, setup: driver.Setup) -> None:
        shas = " ".join(setup.sha(i)[:12] for i in measure.arms)
        self.say(f"block {block} · {measure.phase} · {shas}")

    def step(self, setup: driver.Setup) -> None:
        s = setup.engine.records[-1]
        self.say(
            f"step {s.step}: {setup.sha(s.index)[:12]} graded {s.verdict} after {s.blocks} blocks"
        )
