"""Fuzzing plan loading (issue 8): random YAML and mutated example plans give either a
valid plan or one line (PlanError, exit 2; RefusedError, exit 3 for a path a safety rule
refuses) — never a traceback, never a hang (each example within hypothesis's deadline)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from iolab.errors import EXIT_BAD_INPUT, EXIT_REFUSED, IolabError
from iolab.plan.expand import PLAN_KEYS, plan_from_text
from iolab.plan.merge import CONFIG_KEYS

EXAMPLES = sorted((Path(__file__).parents[1] / "examples").glob("*.yaml"))
WORDS = [
    *PLAN_KEYS, *CONFIG_KEYS, "kind", "loop", "size", "type", "ext4", "fio", "dd", "sysctl",
    "queue", "vm.dirty_bytes", "{mnt}", "{dev}", "&a", "*a", "<<", "values", "path",
    "variants", "write.iops", "1G", "-1", "null", "[w]", "filename={mnt}/f",
]  # fmt: skip
PUNCT = "{}[]:,&*!|>-'\"\n #%@`\\\x00\t\x1fa"
FUZZ = settings(
    max_examples=300,
    deadline=timedelta(seconds=2),
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)


def loads_or_one_line(text: str) -> None:
    try:
        plan_from_text(text, "fuzz.yaml", check_fio=False)
    except IolabError as exc:
        assert exc.exit_code in (EXIT_BAD_INPUT, EXIT_REFUSED), exc
        assert "\n" not in exc.message and exc.message, repr(exc.message)


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
    st.sampled_from(WORDS), st.text(max_size=12),
)  # fmt: skip
trees = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(WORDS), st.text(max_size=6)), inner, max_size=5),
    ),
    max_leaves=25,
)


@FUZZ
@given(trees)
def test_random_yaml_documents(tree: object) -> None:
    loads_or_one_line(yaml.safe_dump(tree, allow_unicode=True))


@FUZZ
@given(st.lists(st.sampled_from([*PUNCT, "<<", *WORDS]), max_size=40))
def test_random_yaml_text(pieces: list[str]) -> None:
    loads_or_one_line("".join(pieces))


@st.composite
def mutated_examples(draw: st.DrawFn) -> str:
    lines = Path(draw(st.sampled_from(EXAMPLES))).read_text().splitlines()
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, max(0, len(lines) - 1)))
        how = draw(st.sampled_from(["drop", "dup", "word", "char", "indent"]))
        if not lines:
            break
        if how == "drop":
            del lines[at]
        elif how == "dup":
            lines.insert(at, lines[at])
        elif how == "word":
            lines[at] = lines[at] + " " + draw(st.sampled_from(WORDS))
        elif how == "char":
            line = lines[at]
            pos = draw(st.integers(0, len(line)))
            lines[at] = line[:pos] + draw(st.characters(max_codepoint=0x7F)) + line[pos + 1 :]
        else:
            lines[at] = "  " + lines[at]
    return "\n".join(lines) + "\n"


@FUZZ
@given(mutated_examples())
def test_mutated_example_plans(text: str) -> None:
    loads_or_one_line(text)
