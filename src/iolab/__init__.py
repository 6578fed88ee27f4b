"""iolab — a storage performance regression lab."""

__version__ = "0.1.0"
