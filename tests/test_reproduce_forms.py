"""What threads look like: prompts glued to commands, arguments wrapped onto the next line,
English sentences that start like shell, and a mail that does not say what it compares."""

from __future__ import annotations

import pytest
import yaml

from iolab.reproduce.service import reproduce

JOB = "fio --name=a --directory=/mnt --rw=write --bs=4k --size=16m\n"


def plan_of(mail: str) -> dict[str, object]:
    loaded = yaml.safe_load(reproduce(mail, "mail").plan_text)
    assert isinstance(loaded, dict)
    return loaded


@pytest.mark.parametrize(
    ("mkfs", "mount", "run"),
    [
        ("$mke2fs -t ext4 -m 1 /dev/sdb", "$mount -o noatime /dev/sdb /mnt", "$" + JOB),
        ("#mkfs.ext4 -m 1 /dev/sdb", "#mount -o noatime /dev/sdb /mnt", "#" + JOB),
        (
            "[root@host tmp]#mkfs.ext4 -m 1 /dev/sdb",
            "[root@host tmp]# mount -o noatime /dev/sdb /mnt",
            "[root@host tmp]#" + JOB,
        ),
    ],
)
def test_prompts_glued_to_commands(mkfs: str, mount: str, run: str) -> None:
    plan = plan_of(f"Steps:\n\n{mkfs}\n{mount}\n{run}")
    assert plan["filesystem"] == {
        "type": "ext4",
        "mkfs_options": "-m 1",
        "mount_options": "noatime",
    }
    assert "rw=write" in str(plan["workload"])


def test_a_device_wrapped_onto_the_next_line() -> None:
    mail = "mkfs.xfs -f -m crc=1\n/dev/sdb\nmount -o noatime,logbsize=256k\n/dev/sdb /mnt\n" + JOB
    plan = plan_of(mail)
    assert plan["filesystem"] == {
        "type": "xfs", "mkfs_options": "-m crc=1", "mount_options": "noatime,logbsize=256k"
    }  # fmt: skip


@pytest.mark.parametrize(
    "prose",
    [
        "for libmount to indicate -o noiversion. This way we can make iversion a default.",
        "if you mount it with -o nodelalloc, writeback is slow; we have seen it twice.",
        "while fio --rw=write runs, the journal commits often.",
    ],
)
def test_english_starting_like_shell_is_prose(prose: str) -> None:
    done = reproduce(f"{prose}\n\nmount -o noatime /dev/sdb /mnt\n{JOB}", "mail")
    assert not any("control flow" in why for _, _, why in done.ignored), done.ignored
    assert all(prose[:20] not in text for _, text, _ in done.ignored)


def test_shell_control_flow_is_still_control_flow() -> None:
    done = reproduce(f"if [ -n $1 ]; then jobs=$1; fi\n{JOB}", "mail")
    assert [why for _, _, why in done.ignored] == [
        "shell control flow around the commands (the defaults it would change are used)"
    ]


def test_a_mail_that_does_not_say_what_it_compares() -> None:
    """One run and prose about a slowdown: one case, said in the plan, the candidates named."""
    mail = (
        "Writes got slower after the upgrade, compared to last month.\n\n"
        f"{JOB}\nThe numbers are below.\n"
    )
    done = reproduce(mail, "mail")
    assert "UNDECIDED: the mail does not say which variants it compares" in done.plan_text
    assert "(candidate lines: 1)" in done.plan_text
    assert "the mail does not say which variants it compares: one case" in done.notes
    assert any(n.startswith("  candidate, line 1: Writes got slower") for n in done.notes)
    assert "\nvariants:" not in done.plan_text


@pytest.mark.parametrize(
    ("params", "jobs", "runtime"),
    [
        # lkp-tests jobs/fio-basic/fio-basic-1ssd-read.yaml
        ({"nr_task": "8t", "runtime": "60", "test_size": "1024M", "bs": "128k"}, 8, "60s"),
        # jobs/fio-basic-1ssd-write.yaml: `nr_task: [1, 100%]`, `runtime: 20m`, `test_size: 32G`
        ({"nr_task": "1", "runtime": "20m", "test_size": "32G"}, 1, "1200s"),
        ({"nr_task": "100%", "runtime": "300s", "test_size": "128G"}, 8, "300s"),
        # robot mails of 2019-2025: `nr_task: 8t`, `test_size: 256g`
        ({"nr_task": "8t", "runtime": "300s", "test_size": "256g"}, 8, "300s"),
    ],
)
def test_lkp_parameters_in_the_forms_its_job_files_use(
    params: dict[str, str], jobs: int, runtime: str
) -> None:
    from iolab.reproduce.robot import fio_basic_plan

    plan = fio_basic_plan(
        {"fs": "ext4", **params}, machine="8 threads 1 sockets Intel(R) Core(TM) i7"
    )
    loaded = yaml.safe_load(plan.text)
    assert f"numjobs={jobs}" in loaded["workload"]["fio"]
    assert loaded["vars"]["runtime"] == runtime
