"""Whether a file starts like a TextArchive, from its first bytes (``detect``): kept apart from
the reader so that sniffing imports nothing else."""

from __future__ import annotations


def looks_like_text_archive(head: bytes) -> bool:
    """True if ``head`` (the first bytes of a file) starts like a TextArchive line.

    Content only, never the name: after optional JSON whitespace (not a blank first line),
    the first line opens a JSON object naming ``particle`` or ``text``, or an array whose
    first member is a string (the form serde also reads).  An empty head is not claimed
    (see ``looks_like_signal_log``).
    """
    first = head.split(b"\n", 1)[0].lstrip(b" \t\r")
    if first.startswith(b"{"):
        return b'"particle"' in first or b'"text"' in first
    return first.startswith(b"[") and first[1:].lstrip(b" \t\r").startswith(b'"')
