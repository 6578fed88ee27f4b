"""QEMU guests running real Debian kernels: the image, one-command runs, fleet-host guests.

`recipe` says what an image holds (and its cache key), `image` builds and caches it,
`disks` makes the small per-guest disks, `vm` starts and always stops QEMU, `run` boots a
guest to run one script, `hosts` keeps `iolab guest up/down/list`'s guests.  See
docs/guests.md.
"""
