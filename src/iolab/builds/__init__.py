"""Commits of a user's repository built in iolab's own clones: the one builder (`builder`),
the repository read (`git`), a kernel build hook's manifest (`kernel`), and kernel commits
built and shipped through the store (`kernel_commits`), which `iolab bisect` and `iolab ab`
both use."""
