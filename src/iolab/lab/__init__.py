"""The lab: the only code that changes the machine (targets, filesystems, knobs, workloads),
and the journal that lets every change be undone — at the end of a run, on Ctrl-C/SIGTERM,
or by `iolab cleanup` after a kill -9."""
