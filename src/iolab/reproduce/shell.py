"""A mail's text as the shell lines a person pasted, each with the mail lines it came from.

What is undone: mail quoting (`> `), `\\` continuations, a mail client's re-wrapping of a long
command (a line that starts with `--option` continues the command above it), shell prompts
(`$ `, `# `, `user@host:~$ `, `[root@host ~]# `), `sudo`, `time`, `env`, and what a pipe or a
redirection adds after the command (`| grep IOPS`, `> /dev/null`, `2>&1`).  Shell variables
are remembered as they are assigned (`jobs=16`, `blocksize="16k"`) and `${1:-16}` gives its
default; `expand` fills them into a word.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from iolab.ingest import mail

_PROMPT = re.compile(
    r"^(?:\$|#|%|>>>|[\w.-]+@[\w.-]+(?::[^\s$#]*)?\s?[$#]|\[[^\]]{1,80}\][$#])\s+(?=\S)"
)
_ASSIGN = re.compile(r"^(?:export\s+|local\s+|readonly\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_VAR = re.compile(
    r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*|\d)(?::?-(?P<default>[^}]*))?\}|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*|\d)"
)
_WRAPPERS = {"sudo", "time", "nohup", "command", "exec", "nice", "ionice", "stdbuf", "env"}
_OPTION_START = re.compile(r"^--?[A-Za-z]")
_LONG = 4000  # a logical line longer than this is not a command someone pasted


@dataclass(frozen=True)
class Line:
    """One logical shell line: mail lines `first`..`last` (1-based) joined."""

    first: int
    last: int
    text: str  # prompt stripped, continuations joined
    depth: int  # mail quote depth of its first line

    @property
    def where(self) -> str:
        return (
            f"line {self.first}" if self.first == self.last else f"lines {self.first}-{self.last}"
        )


@dataclass
class Variables:
    """Shell variables assigned in the mail: name → (value, line it was set on)."""

    values: dict[str, tuple[str, int]] = field(default_factory=dict)

    def assign(self, name: str, value: str, line: int) -> None:
        self.values[name] = (value, line)

    def get(self, name: str) -> tuple[str, int] | None:
        return self.values.get(name)


def mail_lines(text: str) -> tuple[list[str], list[int]]:
    """The readable lines of a mail or paste (quote prefixes removed) and their quote depths."""
    body = mail.message_text(text.replace("\r\n", "\n").replace("\r", "\n"))
    raw = body.split("\n")
    return mail.unquote(raw), [mail.quote_depth(line) for line in raw]


def logical_lines(lines: list[str], depths: list[int], offset: int = 0) -> list[Line]:
    """Join continued and re-wrapped lines; strip prompts.  `offset` is added to every line
    number (when `lines` start after a header the caller dropped)."""
    out: list[Line] = []
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        first = i
        # `\` continuations and a mail client's re-wraps, in any order: a command whose first
        # line was wrapped without `\` may go on with `\` lines after (and the other way)
        while i + 1 < len(lines) and len(text) < _LONG:
            following = lines[i + 1].strip()
            if text.endswith("\\"):
                text = text[:-1].rstrip() + " " + following
            elif following and out_is_command(text) and _wrapped(text, following):
                text = text + " " + following
            elif following and _open_message(text):
                text = text + " " + following  # `echo "…` whose string a client wrapped
            else:
                break
            i += 1
        text = unprompted(text)
        out.append(Line(first + 1 + offset, i + 1 + offset, text, depths[first]))
        i += 1
    return out


def _open_message(text: str) -> bool:
    """`echo "Running with jobs=${jobs}` with its closing quote on the next line: shell reads
    on to it, and so does this (only for echo/printf: prose has apostrophes)."""
    words = _program_words(text)
    return bool(words) and words[0] in ("echo", "printf") and _tokens(unprompted(text)) is None


def _wrapped(text: str, following: str) -> bool:
    """Whether `following` is the rest of the command `text` a mail client wrapped: it starts
    with an option (`--bs=4k`), or it is the device (and mount point) a mkfs or mount line
    still lacks (`mkfs.ext4 -m 1` / `/dev/sdb`)."""
    if _OPTION_START.match(following):
        return True
    if not _DEVICE_LINE.match(following):
        return False
    words = _program_words(text)
    while words and words[0] in _WRAPPERS:
        words = words[1:]
    name = words[0].rsplit("/", 1)[-1] if words else ""
    if name not in ("mount", "mke2fs") and not name.startswith("mkfs"):
        return False
    last = words[-1] if len(words) > 1 else ""
    wants_value = last in ("-o", "-t", "-b", "-m", "-L", "-O", "-E", "-d", "-l", "-i", "-s")
    return not wants_value and not any(w.startswith(("/", "$")) for w in words[1:])


_DEVICE_LINE = re.compile(r"^(?:/dev/|\$)\S+(?:\s+/\S*|\s+\$\S+)?$")
# a prompt glued to its command (`$mke2fs …`, `#mount …`, `[root@host ~]#fio …`): stripped
# only before a program whose settings a plan takes, so `$jobs` or `#comment` stay
_GLUED = re.compile(
    r"^(?:\$|#|\[[^\]]{1,80}\][$#])"
    r"(?=(?:sudo\s+)?(?:/\S*/)?(?:fio|xfs_io|dd|mount|mke2fs|mkfs(?:\.\w+)?|sysctl)\s)"
)


def unprompted(text: str) -> str:
    """The line without its shell prompt (`$ `, `# `, `user@host:~$ `, `[root@h ~]# `, or one
    glued to a command people paste: `$mke2fs`, `#mount`)."""
    stripped = _PROMPT.sub("", text, count=1)
    return _GLUED.sub("", stripped, count=1) if stripped == text else stripped


_CONTROL = re.compile(r"^(?:if|for|while|until|case|then|do|else|elif)\b")


def split_commands(line: Line) -> list[Line]:
    """`mkfs.xfs -f /dev/sdb && mount /dev/sdb /mnt` → two lines (same mail lines); a shell
    loop or conditional stays whole (it is reported as control flow)."""
    text = line.text
    if _CONTROL.match(text) or not any(sep in text for sep in ("&&", "||", ";")):
        return [line]
    parts: list[str] = []
    quote: str | None = None
    start = i = 0
    while i < len(text):
        ch = text[i]
        if quote is not None:
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"':
                i += 1
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "\\":
            i += 1
        elif text.startswith(("&&", "||"), i) or ch == ";":
            parts.append(text[start:i])
            i += 1 if ch == ";" else 2
            start = i
            continue
        i += 1
    parts.append(text[start:])
    pieces = [p.strip() for p in parts if p.strip()]
    if len(pieces) <= 1:
        return [line]
    return [Line(line.first, line.last, piece, line.depth) for piece in pieces]


def _program_words(text: str) -> list[str]:
    return unprompted(text).split()


def out_is_command(text: str) -> bool:
    """Whether a line starts with a program re-wrapped options would belong to."""
    words = _program_words(text)
    while words and words[0] in _WRAPPERS:
        words = words[1:]
    if not words:
        return False
    name = words[0].rsplit("/", 1)[-1]
    return name in ("fio", "xfs_io", "dd", "mount", "mke2fs", "t/io_uring") or name.startswith(
        "mkfs"
    )


def _tokens(text: str) -> list[str] | None:
    try:
        lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        return list(lexer)
    except ValueError:
        return None


def _operator(token: str) -> bool:
    return bool(token) and set(token) <= set(";&|<>")


def words(text: str) -> list[str] | None:
    """The command's words up to the first pipe, redirection or command separator, wrappers
    (`sudo`, `time`, `env X=Y`) dropped; None when the line does not split like shell."""
    tokens = _tokens(text)
    if tokens is None:
        return None
    out: list[str] = []
    for token in tokens:
        if _operator(token):
            break
        out.append(token)
    if out and len(out) < len(tokens) and _descriptor(text, out[-1], tokens[len(out)]):
        out.pop()  # `2>&1`, `2> log`: the descriptor belongs to the redirection
    return _unwrapped(out)


def _descriptor(text: str, word: str, operator: str) -> bool:
    """`2>` (a descriptor) rather than `echo 1 > f` (an argument, then a redirection)."""
    return word.isdigit() and re.search(rf"(?:^|\s){word}{re.escape(operator)}", text) is not None


def _unwrapped(out: list[str]) -> list[str]:
    while out and out[0] in _WRAPPERS:
        head = out.pop(0)
        if head == "env":
            while out and "=" in out[0] and not out[0].startswith("-"):
                out.pop(0)
            continue
        while out and out[0].startswith("-"):
            option = out.pop(0)
            if head in ("nice", "ionice") and option in ("-n", "-c") and out:
                out.pop(0)
    return out


def redirect_target(text: str) -> tuple[list[str], str] | None:
    """`echo 1 > /proc/sys/vm/drop_caches` → (["echo", "1"], "/proc/sys/vm/drop_caches")."""
    tokens = _tokens(text)
    if tokens is None:
        return None
    for at, token in enumerate(tokens):
        if token in (">", ">>", ">|") and at + 1 < len(tokens):
            head = [t for t in tokens[:at] if not _operator(t)]
            if head and _descriptor(text, head[-1], token):
                head.pop()
            return _unwrapped(head), tokens[at + 1]
        if _operator(token) and token not in (">", ">>", ">|"):
            return None
    return None


def tee_target(text: str) -> tuple[list[str], str] | None:
    """`echo mq-deadline | sudo tee /sys/block/sda/queue/scheduler` → (["echo",
    "mq-deadline"], "/sys/block/sda/queue/scheduler")."""
    tokens = _tokens(text)
    if tokens is None or "|" not in tokens:
        return None
    at = tokens.index("|")
    tail = _unwrapped([t for t in tokens[at + 1 :] if not _operator(t)])
    if len(tail) < 2 or tail[0] != "tee":
        return None
    files = [t for t in tail[1:] if not t.startswith("-")]
    head = words(text) or []
    return (head, files[0]) if len(files) == 1 else None


def assignment(text: str) -> tuple[str, str] | None:
    """`jobs=16` / `blocksize="16k"` / `export X=1` → (name, value); None otherwise."""
    match = _ASSIGN.match(text.strip())
    if match is None:
        return None
    try:
        value = shlex.split(match.group(2)) if match.group(2) else [""]
    except ValueError:
        return None
    if len(value) != 1:
        return None
    return match.group(1), value[0]


@dataclass(frozen=True)
class Expanded:
    """A word with the shell variables it named filled in."""

    text: str
    used: tuple[tuple[str, int], ...]  # (variable, line it was set on) for each one used
    unknown: tuple[str, ...]  # variables with no assignment and no default


def expand(word: str, variables: Variables, *, keep: frozenset[str] = frozenset()) -> Expanded:
    """`--bs=${blocksize}` → `--bs=16k`; a name in `keep` becomes the plan placeholder
    `{name}` instead (its value goes to the plan's vars); `${1:-16}` → its default."""
    used: list[tuple[str, int]] = []
    unknown: list[str] = []

    def one(match: re.Match[str]) -> str:
        name = match.group("name") or match.group("bare")
        default = match.group("default")
        found = variables.get(name)
        if found is not None:
            used.append((name, found[1]))
            return f"{{{name}}}" if name in keep else found[0]
        if default is not None:
            return default
        unknown.append(name)
        return match.group(0)

    return Expanded(_VAR.sub(one, word), tuple(used), tuple(unknown))
