"""A 0-day/LKP report in the robot's own format, naming any base and commit: the fsmark
regression mail the planted-regression bench imports (and tests that need a robot mail over
shas of their own).  The layout — headers, the `commit:` line, `testcase:` and its
`parameters:` block, the dimension header, the two commits and the comparison table with
16- and 27-digit shas — is the one of tests/data/reports/lkp."""

from __future__ import annotations

PARAMETERS = {
    "iterations": "1x",
    "nr_threads": "1t",
    "disk": "1HDD",
    "fs": "ext4",
    "filesize": "4K",
    "test_size": "4M",
    "sync_method": "fsyncBeforeClose",
    "nr_directories": "16d",
    "nr_files_per_directory": "256fpd",
    "cpufreq_governor": "performance",
}

MACHINE = (
    "64 threads 2 sockets Intel(R) Xeon(R) Gold 6346 CPU @ 3.10GHz (Ice Lake) with 256G memory"
)


def fsmark_mail(
    base: str,
    base_subject: str,
    commit: str,
    subject: str,
    *,
    change_pct: float = -45.3,
    message_id: str = "202611270212.e2e0a1b2-lkp@intel.com",
    **parameters: str,
) -> str:
    """The robot's mail: `commit` regressed fsmark.files_per_sec by `change_pct` against
    `base` (full shas; the mail spells them 10, 12, 16 and 27 digits as the robot does);
    `parameters` replace those of PARAMETERS (`test_size="16M"`)."""
    given = {**PARAMETERS, **parameters}
    dims = "/".join(sorted(given)) + "/compiler/kconfig/rootfs/tbox_group/testcase"
    values = "/".join(given[k] for k in sorted(given))
    values += "/gcc-14/x86_64-rhel-9.4/debian-13-x86_64-20250902.cgz/lkp-icl-2sp9/fsmark"
    before, after = 2210.4, 2210.4 * (1 + change_pct / 100)
    txn_before, txn_after = 4421.0, 4421.0 * 1.96
    sp = " "  # the robot's trailing blanks, kept
    params = "\n".join(f"\t{k}: {v}" for k, v in given.items())
    return f"""\
From: kernel test robot <oliver.sang@intel.com>
Date: Fri, 27 Nov 2026 02:12:27 +0000
Subject: [linus:master] [ext4]  {commit[:10]}: fsmark.files_per_sec {-change_pct:.1f}% regression
Message-ID: <{message_id}>



Hello,

kernel test robot noticed a {change_pct:.1f}% regression of fsmark.files_per_sec on:


commit: {commit} ("{subject}")
https://git.kernel.org/cgit/linux/kernel/git/torvalds/linux.git master

testcase: fsmark
config: x86_64-rhel-9.4
compiler: gcc-14
test machine: {MACHINE}
parameters:

{params}


If you fix the issue in a separate patch/commit (i.e. not just a new version of
the same patch/commit), kindly add following tags
| Reported-by: kernel test robot <oliver.sang@intel.com>
| Closes: https://lore.kernel.org/oe-lkp/{message_id}


Details are as below:
-------------------------------------------------------------------------------------------------->


The kernel config and materials to reproduce are available at:
https://download.01.org/0day-ci/archive/20261127/{message_id}

=========================================================================================
{dims}:
  {values}

commit:{sp}
  {base[:10]} ("{base_subject}")
  {commit[:10]} ("{subject}")

{base[:16]} {commit[:27]}{sp}
---------------- ---------------------------{sp}
         %stddev     %change         %stddev
             \\          |                \\{sp}{sp}
  {txn_before:8.0f}           +96.0%   {txn_after:8.0f}        proc-vmstat.nr_dirtied
  {before:8.1f}     {change_pct:+8.1f}%   {after:8.1f}        fsmark.files_per_sec
     21.67            +3.2%      22.36        fsmark.time.elapsed_time




Disclaimer:
Results have been estimated based on internal Intel analysis and are provided
for informational purposes only. Any difference in system hardware or software
design or configuration may affect actual performance.


--{sp}
0-DAY CI Kernel Test Service
https://github.com/intel/lkp-tests/wiki
"""
