"""YAML read into a tree that remembers where every value came from.

PyYAML's composer gives nodes with marks; we keep the line (1-based), the dotted path as
written in the file (`variants.fsync.fio.fsync`) and the file name on each value, so that a
value merged from a variant into a case still points at the variant's line when it is wrong.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn

import yaml

from iolab.errors import PlanError, RefusedError
from iolab.textsafe import shown

Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Node:
    """One YAML value with its origin.  `value` is dict[str, Node], list[Node] or a scalar."""

    value: object
    line: int  # line of the value
    path: str  # where it was written, dotted ("" for the document root)
    file: str
    key_line: int  # line of the mapping key that holds it (== line otherwise)

    @property
    def is_map(self) -> bool:
        return isinstance(self.value, dict)

    @property
    def is_list(self) -> bool:
        return isinstance(self.value, list)

    @property
    def is_scalar(self) -> bool:
        return not (self.is_map or self.is_list)

    def items(self) -> dict[str, Node]:
        """The mapping's entries (call only after checking `is_map`)."""
        assert isinstance(self.value, dict)
        return self.value

    def elements(self) -> list[Node]:
        assert isinstance(self.value, list)
        return self.value

    def fail(self, message: str, *, at_key: bool = False) -> NoReturn:
        """Raise the one-line PlanError `FILE:LINE: PATH: message`."""
        line = self.key_line if at_key else self.line
        where = f"{self.path}: " if self.path else ""
        raise PlanError(shown(f"{self.file}:{line}: {where}{message}"))

    def refuse(self, message: str) -> NoReturn:
        """Raise the one-line RefusedError (exit 3) `FILE:LINE: PATH: refusing: message`: the
        plan is valid but a safety rule will not run it."""
        where = f"{self.path}: " if self.path else ""
        raise RefusedError(shown(f"{self.file}:{self.line}: {where}refusing: {message}"))

    def describe(self) -> str:
        """The value as a user would recognise it in an error message."""
        if self.is_map:
            return "a mapping"
        if self.is_list:
            return "a list"
        return repr(self.value)


def child_path(parent: str, key: str) -> str:
    return f"{parent}.{key}" if parent else key


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """` (did you mean 'x'?)` when a close choice exists, else ``."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


# A plan is a few hundred values; anchors and aliases may repeat parts of it, but a document
# whose aliases expand to more values than this is an alias bomb ("billion laughs").
MAX_NODES = 100_000


class _Budget:
    """Counts values as the tree is built, aliases expanded: a bomb stops after MAX_NODES."""

    def __init__(self, file: str) -> None:
        self.left = MAX_NODES
        self.file = file

    def spend(self, node: yaml.Node) -> None:
        self.left -= 1
        if self.left < 0:
            raise PlanError(
                f"{self.file}:{node.start_mark.line + 1}: the plan expands to more than "
                f"{MAX_NODES} values (anchors and aliases nested too deep?)"
            )


def parse_yaml(text: str, file: str) -> Node:
    """Parse one YAML document; YAML errors and duplicate keys become PlanError with a line."""
    bad = text.find("\x00")
    if bad >= 0:
        line = text.count("\n", 0, bad) + 1
        raise PlanError(f"{file}:{line}: a NUL byte: not a text plan")
    loader = None
    try:
        loader = yaml.SafeLoader(text)  # its reader refuses control characters right here
        root = loader.get_single_node()
        if root is None:
            raise PlanError(f"{file}:1: the plan is empty")
        _check_expansion(root, file)
        return _convert(loader, root, "", file, root.start_mark.line + 1, _Budget(file))
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise PlanError(f"{file}:{line}: not valid YAML: {e.problem or e.context}") from None
    except yaml.YAMLError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise PlanError(f"{file}:1: not valid YAML: {first}") from None
    except RecursionError:
        raise PlanError(f"{file}:1: the plan nests too deep") from None
    finally:
        if loader is not None:
            loader.dispose()


def _check_expansion(root: yaml.Node, file: str) -> None:
    """Count the values the document expands to — every alias and `<<` merge counted as the
    copy it stands for — in time linear in the document, before anything is expanded."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_nodes:
            line = node.start_mark.line + 1
            raise PlanError(f"{file}:{line}: an alias refers to a value that contains it")
        open_nodes.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(item) for item in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        open_nodes.discard(key)
        if total > MAX_NODES:
            raise PlanError(
                f"{file}:{node.start_mark.line + 1}: the plan expands to more than "
                f"{MAX_NODES} values (anchors and aliases nested too deep?)"
            )
        sizes[key] = total
        return total

    size(root)


def _convert(
    loader: yaml.SafeLoader, node: yaml.Node, path: str, file: str, key_line: int, budget: _Budget
) -> Node:
    budget.spend(node)
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)  # resolves `<<: *anchor` merge keys
        entries: dict[str, Node] = {}
        for key_node, value_node in node.value:
            kline = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                raise PlanError(f"{file}:{kline}: {path or 'plan'}: keys must be plain words")
            key = str(key_node.value)
            if key in entries:
                raise PlanError(
                    f"{file}:{kline}: {child_path(path, key)}: duplicate key "
                    f"(first on line {entries[key].key_line})"
                )
            entries[key] = _convert(loader, value_node, child_path(path, key), file, kline, budget)
        return Node(entries, line, path, file, key_line)
    if isinstance(node, yaml.SequenceNode):
        items = [
            _convert(loader, item, f"{path}[{i}]", file, item.start_mark.line + 1, budget)
            for i, item in enumerate(node.value)
        ]
        return Node(items, line, path, file, key_line)
    value = loader.construct_object(node, deep=True)
    if not isinstance(value, str | int | float | bool) and value is not None:
        value = str(value)  # dates and other YAML types: keep the text
    return Node(value, line, path, file, key_line)


def scalar_node(value: Scalar, like: Node, path: str | None = None) -> Node:
    """A synthetic value that reports errors at `like`'s place."""
    return Node(value, like.line, like.path if path is None else path, like.file, like.key_line)


def map_node(entries: dict[str, Node], like: Node) -> Node:
    return Node(entries, like.line, like.path, like.file, like.key_line)
