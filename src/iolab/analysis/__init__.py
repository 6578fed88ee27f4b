"""The analysis service: selectors (`analysis.select`) and comparisons built from the store
(`analysis.build`), returned as the `Report` every format in `iolab.report` renders.

Nothing is imported here, so `iolab.analysis.select` stays light (no scipy)."""
