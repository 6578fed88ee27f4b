"""Kernels under test: which kernel a sample needs, how a host switches to it, and proof that
it did (docs/kernels.md).

`boot` reads the running boot's provenance (release, command line, boot id, build id),
`local` refuses kernel plans where no worker can boot them, `order` makes balanced orders and
the boot schedule, `hooks` turns a host's hook argument lists into commands, `switch` boots a
host into a kernel and checks the boot that follows.
"""
