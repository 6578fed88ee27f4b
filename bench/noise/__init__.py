"""Helpers for the noise benchmarks: a private ext4 loop image, one fio run, series statistics."""
