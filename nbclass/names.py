"""Names as printed: one line per document whatever bytes a file name holds.

File names on Linux are bytes; Python decodes the ones that are not UTF-8 with
``surrogateescape`` (byte 0xff becomes U+DCFF). Printed as is, such a name cannot be
written as UTF-8, and a newline or tab in a name would break a line-per-document output.
:func:`escape` turns every such character into a visible, unambiguous escape.
"""

from __future__ import annotations

_SIMPLE = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_char(ch: str) -> str:
    simple = _SIMPLE.get(ch)
    if simple is not None:
        return simple
    o = ord(ch)
    if 0xDC80 <= o <= 0xDCFF:  # an undecodable byte, kept by surrogateescape
        return f"\\x{o - 0xDC00:02x}"
    if 0xD800 <= o <= 0xDFFF:  # any other lone surrogate: never valid UTF-8
        return f"\\u{o:04x}"
    if o < 0x20 or o == 0x7F:  # C0 control characters, DEL
        return f"\\x{o:02x}"
    if 0x80 <= o < 0xA0 or o in (0x2028, 0x2029):  # C1 controls, line/paragraph separators
        # \u, so that \xNN always means a raw byte
        return f"\\u{o:04x}"
    return ch


def escape(name: str) -> str:
    """``name`` on one line, printable and encodable as UTF-8.

    Backslash, tab, newline and carriage return become ``\\\\``, ``\\t``, ``\\n``, ``\\r``;
    C0 control characters and DEL become ``\\xNN``, and so do bytes that were not UTF-8
    (there is no clash: those are 0x80 to 0xff); C1 control characters, U+2028 and U+2029
    (line breaks to ``str.splitlines``) and any other lone surrogate become ``\\uNNNN``.
    Everything else is kept, so a plain name is unchanged, and distinct names stay
    distinct.

    >>> escape("a\\tb\\nc")
    'a\\\\tb\\\\nc'
    >>> escape(b"caf\\xe9.txt".decode("utf-8", "surrogateescape"))
    'caf\\\\xe9.txt'
    >>> escape("été.txt")
    'été.txt'
    """
    if name.isprintable() and "\\" not in name:
        return name
    return "".join(map(_escape_char, name))


def is_utf8(name: str) -> bool:
    """False when ``name`` holds bytes that were not UTF-8 (or any lone surrogate)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
