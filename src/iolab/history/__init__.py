"""History: series of per-run points from the store, change points, the regression registry.

The face is `iolab.history.service` (history, regressions, mark) and the typed results in
`iolab.history.types`; docs/history.md describes the method, the formats and the measurements.
"""
