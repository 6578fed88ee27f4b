"""iolab's comparison statistics as they were before issue 21 made `iolab compare` fast
(commit 7cbe790's src/iolab/stats, scipy throughout, every metric's tests computed twice):
the reference tests/test_compare_equivalence.py holds the new code to, on random tables.
Kept verbatim apart from these imports; not maintained further."""
