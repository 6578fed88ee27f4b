"""Evidence sources that run beside a workload: one module per source (jbd2, diskstats,
vmstat, tracepoint histograms).  Each reads the kernel before and after a sample and returns
metrics and histogram bins that are stored with that sample."""
