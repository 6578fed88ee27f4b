"""Balanced orders for kernel variants, and which samples need a boot.

A host that switches kernels cannot shuffle freely at no cost: every switch is a boot.  The
orders here keep what randomization buys (no drift posing as a difference) while balancing
position and carry-over: blocks come in pairs, the first a random permutation of the cases
and the second its reverse — ABBA or BAAB for two variants, each with probability 1/2.  Over
a pair each case is first once and last once, and every "X after Y" is matched by "Y after X".

`boot_schedule` then says which samples start with a boot: all of them under `per-sample`
(the boot is the unit of replication: two samples in one boot are not independent), or only
those whose kernel (or command line) differs from the one running under `per-switch`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from iolab.plan.model import Plan, Reboot


def paired_orders(n_cases: int, blocks: int, seed: int) -> list[list[int]]:
    """`blocks` orders of case indices 0..n-1: random permutation, then its reverse, ..."""
    rng = random.Random(seed)
    orders: list[list[int]] = []
    while len(orders) < blocks:
        first = list(range(n_cases))
        rng.shuffle(first)
        orders.append(first)
        if len(orders) < blocks:
            orders.append(first[::-1])
    return orders


def paired_block_order(seed: int, block: int, n_cases: int) -> list[int]:
    """Block `block`'s order (1-based blocks): blocks 2k-1 and 2k are a pair, the second the
    reverse of the first — a function of seed and block only, so any host (and a redo of the
    block) sees the same order.  Unlike `lab.runner.shuffled_block_order`, blocks are not
    independent: the pairing is what balances carry-over between kernels."""
    pair = (block - 1) // 2
    first = list(range(n_cases))
    random.Random(f"{seed}:kernel-pair:{pair}").shuffle(first)
    return first if block % 2 == 1 else first[::-1]


@dataclass(frozen=True)
class Slot:
    """One sample of the schedule."""

    block: int  # 1-based, as the lab numbers blocks
    position: int  # 0-based within the block
    case: int  # index into Plan.cases
    kernel: str | None
    cmdline: tuple[str, ...]
    boot: bool  # a boot into `kernel` comes first


def boot_schedule(
    plan: Plan,
    orders: Sequence[Sequence[int]],
    *,
    running: tuple[str | None, tuple[str, ...]] = (None, ()),
    reboot: Reboot | None = None,
) -> list[Slot]:
    """The samples of `orders` in run order, each marked with whether it boots first.
    `running` is the (release, cmdline additions) the host is on at the start."""
    mode = reboot or plan.reboot
    current = running
    slots: list[Slot] = []
    for b, order in enumerate(orders, start=1):
        for position, index in enumerate(order):
            case = plan.cases[index]
            wanted = (case.kernel, case.kernel_cmdline)
            needs = case.kernel is not None or bool(case.kernel_cmdline)
            boot = needs and (mode == "per-sample" or wanted != current)
            if boot:
                current = wanted
            slots.append(Slot(b, position, index, case.kernel, case.kernel_cmdline, boot))
    return slots
