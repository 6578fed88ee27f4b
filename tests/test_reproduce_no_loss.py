"""No silent loss: every option of every command `iolab reproduce` uses ends up in the plan
with the same meaning, or in its "left out" list with the reason — whatever the mail's layout.

Generated here: fio command lines (wrapped with `\\` or without it at any option boundary, as
mail clients re-wrap long lines; values through `${var}` and `$var` set by assignments above;
a prompt in front; quoted at 0–5 levels; CRLF line ends), with the mkfs and mount lines of a
recipe, and fio job files (blank lines, comments, spaces around `=`, quoting, CRLF).  The check
reads the plan back and compares option by option, both ways: nothing of the mail missing,
nothing in the plan the mail did not say.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolab.plan.expand import plan_from_text
from iolab.reproduce.service import Reproduction, drafted, reproduce

# >= 500 generated mails per test and run: CI's derandomized profile draws the same ones,
# `make fuzz` fresh ones.  The drafts are read back with libyaml here (loading each as a plan
# would take ten times as long); `test_generated_plans_load` loads a sample of them whole.
NO_LOSS = settings(
    max_examples=500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# fio options and values fio accepts; the keys in LEFT_OUT are command-line-only or output
# options a plan does not carry, and must be said
VALUES: dict[str, list[str]] = {
    "rw": ["read", "write", "randread", "randwrite", "randrw"],
    "bs": ["4k", "16k", "64k", "1m"],
    "ioengine": ["psync", "sync", "libaio", "pvsync"],
    "iodepth": ["1", "8", "32"],
    "numjobs": ["1", "4", "16"],
    "size": ["1m", "16m", "32m"],
    "runtime": ["5", "30", "60"],
    "fsync": ["0", "1", "4"],
    "fdatasync": ["1"],
    "end_fsync": ["1"],
    "direct": ["0", "1"],
    "buffered": ["0", "1"],
    "filename": ["file0", "data.bin"],
    "directory": ["/mnt"],
    "nrfiles": ["1", "2"],
    "ramp_time": ["1", "2"],
    "rwmixread": ["30", "70"],
    "randrepeat": ["0", "1"],
    "invalidate": ["0", "1"],
    "max-jobs": ["16", "4"],
    "output-format": ["json", "normal"],
    "eta": ["never"],
    "status-interval": ["1"],
}
FLAGS = ["time_based", "thread", "group_reporting", "norandommap"]
LEFT_OUT = {"max-jobs", "output-format", "eta", "status-interval"}


@dataclass(frozen=True)
class Mail:
    text: str
    options: tuple[tuple[str, str | None], ...]  # every fio option the mail's command gives
    mkfs: tuple[str, ...]
    mount: tuple[str, ...]


def quoted(lines: list[str], depth: int, style: str) -> list[str]:
    return [style * depth + line for line in lines] if depth else lines


def finish(draw: st.DrawFn, lines: list[str]) -> str:
    depth = draw(st.integers(0, 5))
    lines = quoted(lines, depth, draw(st.sampled_from(["> ", ">", "> > "])))
    return draw(st.sampled_from(["\n", "\r\n"])).join(lines) + "\n"


@st.composite
def option_sets(draw: st.DrawFn) -> list[tuple[str, str | None]]:
    keys = draw(st.lists(st.sampled_from([*VALUES, *FLAGS]), min_size=1, max_size=10, unique=True))
    return [(k, draw(st.sampled_from(VALUES[k])) if k in VALUES else None) for k in keys]


@st.composite
def command_mails(draw: st.DrawFn) -> Mail:
    """A recipe: mkfs, mount, variables, then one fio command laid out as mails do."""
    glob = draw(option_sets())
    job = [(k, v) for k, v in draw(option_sets()) if k not in dict(glob)]
    assigned: list[str] = []
    words: list[str] = []
    names: dict[str, str] = {}
    for key, value in [*glob, ("name", "job1"), *job]:
        if value is not None and key != "name" and draw(st.booleans()):
            name = names.setdefault(value, f"v{len(names)}")
            ref = draw(st.sampled_from([f"${{{name}}}", f"${name}", f"${{{name}:-x}}"]))
            quote = draw(st.sampled_from(["", '"', "'"]))
            assigned.append(f"{name}={quote}{value}{quote}")
            value = ref
        # fio takes an option's value after `=` or as the next word
        eq = draw(st.sampled_from(["=", "=", " "])) if key != "name" else "="
        words.append(f"--{key}" if value is None else f"--{key}{eq}{value}")
    program = draw(st.sampled_from(["fio", "/usr/bin/fio", "sudo fio"]))
    text = program
    lines: list[str] = []
    for word in words:
        sep = draw(st.sampled_from([" ", " ", " \\\n", " \\\n        ", "\n", "\n  "]))
        if "\n" in sep:
            lines.append(text + sep.split("\n")[0])
            text = sep.split("\n")[1] + word
        else:
            text += sep + word
    lines.append(text)
    prompt = draw(st.sampled_from(["", "$ ", "# ", "[root@host ~]# ", "root@box:~# "]))
    lines[0] = prompt + lines[0]
    choices = [[], ["-m", "1"], ["-b", "4096"], ["-m", "1", "-b", "1024"]]
    mkfs = tuple(draw(st.sampled_from(choices)))
    mount = tuple(draw(st.sampled_from([[], ["noatime"], ["noatime", "data=ordered"]])))
    setup = [
        f"{prompt}mkfs.ext4 {' '.join([*mkfs, '/dev/sdb'])}".replace("  ", " "),
        f"{prompt}mount {'-o ' + ','.join(mount) + ' ' if mount else ''}/dev/sdb /mnt",
    ]
    body = ["The recipe:", "", *setup, *assigned, "", *lines, "", "That is all."]
    options = tuple((k, v) for k, v in [*glob, *job])
    return Mail(finish(draw, body), options, mkfs, mount)


@st.composite
def job_file_mails(draw: st.DrawFn) -> Mail:
    """A pasted fio job file: [global] and one or two jobs, as people lay them out."""
    sections = [("global", draw(option_sets()))]
    taken = set(dict(sections[0][1]))
    allowed = [k for k in [*VALUES, *FLAGS] if k not in taken and k not in LEFT_OUT]
    for name in draw(st.sampled_from([["job1"], ["job1", "job2"]])):
        keys = draw(st.lists(st.sampled_from(allowed), min_size=1, max_size=6, unique=True))
        sections.append((name, [(k, draw(st.sampled_from(VALUES[k])) if k in VALUES else None)
                                for k in keys]))  # fmt: skip
    sections[0] = ("global", [(k, v) for k, v in sections[0][1] if k not in LEFT_OUT])
    lines = ["Here is the job file:", ""]
    for name, opts in sections:
        lines.append(f"[{name}]")
        for key, value in opts:
            eq = draw(st.sampled_from(["=", "=", " = "]))
            lines.append(key if value is None else f"{key}{eq}{value}")
            if draw(st.integers(0, 9)) == 0:
                lines.append(draw(st.sampled_from(["; a comment", "# a comment"])))
        if draw(st.booleans()):
            lines.append("")
    lines += ["", "Run it with fio and compare."]
    options = tuple(o for _, opts in sections for o in opts)
    return Mail(finish(draw, lines), options, (), ())


def plan_options(plan_text: str) -> tuple[list[tuple[str, str | None]], list[str], list[str]]:
    """The plan's fio options (placeholders filled from its vars), mkfs words, mount options."""
    plan = yaml.load(plan_text, Loader=yaml.CSafeLoader)
    values = {str(k): str(v) for k, v in (plan.get("vars") or {}).items()}

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return values.get(name, "{" + name + "}") if name else match.group(0)[0]

    options: list[tuple[str, str | None]] = []
    for line in plan["workload"]["fio"].splitlines():
        if line and not line.startswith("["):
            key, eq, value = line.partition("=")
            value = re.sub(r"\{(\w+)\}|\{\{|\}\}", fill, value)
            options.append((key, value if eq else None))
    fs = plan.get("filesystem") or {}
    mkfs = str(fs.get("mkfs_options") or "").split()
    mount = [o for o in str(fs.get("mount_options") or "").split(",") if o]
    return options, mkfs, mount


def meaning(key: str, value: str | None) -> tuple[str, str | None]:
    """An option as the plan writes it: the mail's mount point is the plan's {mnt}."""
    if key == "directory" and value == "/mnt":
        return key, "{mnt}"
    return key, value


def check_no_loss(mail: Mail) -> Reproduction:
    done = drafted(mail.text, "generated")
    planned, mkfs, mount = plan_options(done.plan_text)
    left = [what for _, what, _ in done.left_out]
    expected = []
    for key, value in mail.options:
        word = f"fio --{key}" + ("" if value is None else f"={value}")
        if key in LEFT_OUT:
            assert word in left, (word, left, done.plan_text)
        else:
            expected.append(meaning(key, value))
    assert sorted(planned, key=str) == sorted(expected, key=str), (mail.text, done.plan_text)
    assert all(w.split("=", 1)[0].removeprefix("fio --") in LEFT_OUT for w in left), left
    assert mkfs == list(mail.mkfs) and mount == list(mail.mount), (mail.text, done.plan_text)
    return done


@NO_LOSS
@given(mail=command_mails())
def test_every_option_of_a_fio_command_is_planned_or_said(mail: Mail) -> None:
    check_no_loss(mail)


@NO_LOSS
@given(mail=job_file_mails())
def test_every_option_of_a_job_file_is_planned(mail: Mail) -> None:
    check_no_loss(mail)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mail=st.one_of(command_mails(), job_file_mails()))
def test_generated_plans_load(mail: Mail) -> None:
    """What the no-loss tests read back with libyaml is a plan iolab loads, options intact."""
    done = check_no_loss(mail)
    plan = plan_from_text(reproduce(mail.text, "generated").plan_text, "drafted.yaml")
    fio = plan.cases[0].workload.fio_text or ""
    planned, _, _ = plan_options(done.plan_text)
    assert [line for line in fio.splitlines() if line and not line.startswith("[")] == [
        k if v is None else f"{k}={v}" for k, v in planned
    ]


def test_a_wrapped_first_line_keeps_every_option() -> None:
    """The ext4 IOPS thread's layout: the first line wrapped without `\\`, then `\\` lines."""
    mail = (
        'jobs=16\nblocksize="16k"\n\n'
        "/usr/bin/fio --name=fio-test --directory=/mnt --rw=randwrite\n"
        "--ioengine=psync --buffered=1 --bs=${blocksize} \\\n"
        "         --max-jobs=${jobs} --numjobs=${jobs} --runtime=60 --thread \\\n"
        "         --filename=file0 --fsync=1 --group_reporting --time_based\n"
    )
    done = reproduce(mail, "wrapped")
    planned, _, _ = plan_options(done.plan_text)
    assert ("filename", "file0") in planned and ("fsync", "1") in planned
    assert [w for _, w, _ in done.left_out] == ["fio --max-jobs=16"]
    assert not re.search(r"thread --|\\\\", done.plan_text)
