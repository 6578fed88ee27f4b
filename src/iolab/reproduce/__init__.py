"""From a pasted report to a runnable plan: `iolab reproduce MAIL`.

The modules, in the order the text flows through them:

- `shell`    — the mail's lines as shell lines: quote prefixes, `\\` continuations and
               re-wrapped option lists joined, prompts and `sudo` dropped, variable
               assignments remembered (`jobs=16`, `${1:-default}`), every line's number kept;
- `commands` — one recogniser per command people paste (mkfs, mount, fio, xfs_io, dd, sysctl,
               `echo N > /proc/sys/...`, `echo X > /sys/block/*/queue/*`), and the reasons the
               other commands are left out;
- `jobfile`  — fio job files pasted as text (`[global]` …);
- `context`  — what the prose says: kernels, reverts, patches, stacks and device models;
- `draft`    — the choices (filesystem, mount options, workload, knobs, variants, sizes), each
               with the mail lines it came from;
- `writer`   — the plan YAML, every choice commented with its mail line;
- `service`  — `reproduce(text, source)`: all of the above, and a check that the plan loads;
               a mail with no command line goes to `service.OTHER_READERS` first (where a
               test robot's report, 0-day's `testcase:`/`parameters:`, plugs in).

Nothing here touches the machine; `iolab reproduce --run` hands the written plan to `iolab ab`.
"""
