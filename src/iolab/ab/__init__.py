"""The A/B service: contrasts and their sequential decisions (`ab.contrasts`), the block
loop (`ab.loop`), and the run itself with its typed result (`ab.run`)."""

from iolab.ab import run

__all__ = ["run"]
