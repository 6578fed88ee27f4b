"""User text made safe for a terminal: labels, captions, tags, plan values, file names.

A label or caption with an escape sequence (`\\x1b[2J`, an OSC title, a bidi override)
printed raw would clear the screen, retitle the window or reorder what the reader sees.
Every place that prints text a user gave — through click, rich or a text report — passes it
through `shown`, which writes control characters as visible escapes (`\\x1b`, `\\u202e`);
`shown_markup` also escapes rich's `[style]` markup for strings rich interprets.
"""

from __future__ import annotations

import unicodedata

# Format characters that reorder or hide text (bidi embeddings, overrides and isolates).
_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _visible(ch: str, keep: str) -> str:
    if ch in keep:
        return ch
    if ch in _BIDI or unicodedata.category(ch) == "Cc":
        code = ord(ch)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return ch


def shown(text: str, *, keep: str = "") -> str:
    """`text` with control characters (C0, DEL, C1, bidi controls) as visible escapes;
    characters in `keep` (e.g. "\\n" for multi-line text) pass through."""
    if text.isprintable() and not _BIDI.intersection(text):
        return text
    return "".join(_visible(ch, keep) for ch in text)


def shown_markup(text: str) -> str:
    """`shown`, then rich markup escaped: for user text inside a rich markup string."""
    from rich.markup import escape

    return escape(shown(text))
