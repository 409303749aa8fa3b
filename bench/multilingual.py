"""A multilingual corpus from the translated message catalogs installed on this machine.

Usage: python bench/multilingual.py OUT_DIR [--per-language N] [--locale-dir DIR]
       python bench/multilingual.py OUT_DIR --join SOURCE_DIR --size BYTES

Every Debian or Ubuntu system holds the translations of its programs' messages as
gettext catalogs, ``/usr/share/locale/LANG/LC_MESSAGES/*.mo`` (coreutils, bash, dpkg,
the ISO code names of ``iso-codes``, ...). Each language below with at least
``MIN_MESSAGES`` distinct translated messages becomes a class, and each message a
document: ``OUT_DIR/train/LANG/N.txt`` and ``OUT_DIR/test/LANG/N.txt`` (one message in
five goes to test, chosen by a hash of its text, so the split is the same on every run
and machine). Up to ``--per-language`` messages per language are kept (the same choice
by hash), so that no language dominates.

The languages span scripts and their hard cases: Latin with diacritics, Cyrillic pairs
(Russian, Ukrainian, Serbian), Greek (final sigma), Turkish (dotted and dotless i),
Devanagari and Tamil (combining marks), Georgian, Chinese, Japanese and Korean. A
language not installed is left out; too few languages stop the script with the set-up
command (see docs/performance.md).

The catalogs are read with the file format's own layout (GNU gettext's ``.mo``: a
header, then tables of lengths and offsets), which needs no other program.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import struct
import sys
from pathlib import Path

LANGUAGES = (
    "de", "fr", "es", "pl", "tr", "vi", "ru", "uk", "sr", "el",
    "ka", "ta", "mr", "ja", "ko", "zh_CN",
)  # fmt: skip
MIN_MESSAGES = 500
MIN_LANGUAGES = 4
SETUP = "sudo apt-get install -y coreutils bash dpkg gnupg iso-codes libc-l10n"
_CHARSET = re.compile(rb"charset=([-\w]+)", re.IGNORECASE)


def catalog_messages(path: Path) -> list[str]:
    """The translated messages of one ``.mo`` catalog (plural forms joined by newlines);
    an unreadable or damaged catalog gives none."""
    try:
        data = path.read_bytes()
        magic = struct.unpack("<I", data[:4])[0]
        order = "<" if magic == 0x950412DE else ">"
        _, n, originals, translations = struct.unpack(order + "4I", data[4:20])
        entries = []
        for i in range(n):
            length, offset = struct.unpack_from(order + "2I", data, translations + 8 * i)
            original_length = struct.unpack_from(order + "I", data, originals + 8 * i)[0]
            entries.append((original_length, data[offset : offset + length]))
    except (OSError, struct.error):
        return []
    charset = "utf-8"
    for original_length, text in entries:
        if original_length == 0:  # the header: its Content-Type names the charset
            found = _CHARSET.search(text)
            if found:
                charset = found.group(1).decode("ascii")
    try:
        "".encode(charset)
    except LookupError:
        charset = "utf-8"
    return [
        text.decode(charset, "replace").replace("\0", "\n").strip()
        for original_length, text in entries
        if original_length and text.strip()
    ]


def rank(message: str) -> int:
    """A number fixed by the message's text: the split and the sample follow it."""
    return int.from_bytes(hashlib.sha256(message.encode("utf-8")).digest()[:8], "big")


def build(out: Path, per_language: int, locale_dir: Path) -> dict[str, int]:
    """Write the corpus into ``out`` (replacing it); the messages kept per language."""
    kept = {}
    shutil.rmtree(out, ignore_errors=True)
    for language in LANGUAGES:
        folder = locale_dir / language / "LC_MESSAGES"
        messages = set()
        for path in sorted(folder.glob("*.mo")) if folder.is_dir() else []:
            messages.update(m for m in catalog_messages(path) if m)
        if len(messages) < MIN_MESSAGES:
            print(f"multilingual: {language}: {len(messages)} messages, left out",
                  file=sys.stderr)  # fmt: skip
            continue
        chosen = sorted(messages, key=rank)[:per_language]
        for part in ("train", "test"):
            (out / part / language).mkdir(parents=True)
        for n, message in enumerate(chosen):
            part = "test" if rank(message) % 5 == 0 else "train"
            (out / part / language / f"{n:06d}.txt").write_text(message + "\n", "utf-8")
        kept[language] = len(chosen)
    if len(kept) < MIN_LANGUAGES:
        shutil.rmtree(out, ignore_errors=True)
        sys.exit(
            f"multilingual: only {len(kept)} languages have {MIN_MESSAGES} translated "
            f"messages under {locale_dir}; install some translated programs first: {SETUP}"
        )
    return kept


def join(source: Path, out: Path, size: int) -> int:
    """Write the documents of the folder ``source`` (one subfolder per class), joined in
    the order of their names into documents of about ``size`` bytes each, into ``out``
    (replacing it): the same text and classes in fewer, longer files. The number of
    documents written."""
    shutil.rmtree(out, ignore_errors=True)
    written = 0
    for folder in sorted(p for p in source.iterdir() if p.is_dir()):
        (out / folder.name).mkdir(parents=True)
        part: list[bytes] = []
        held = 0
        files = sorted(folder.iterdir())
        for i, path in enumerate(files):
            part.append(path.read_bytes())
            held += len(part[-1])
            if held >= size or i == len(files) - 1:
                (out / folder.name / f"{written:06d}.txt").write_bytes(b"".join(part))
                written += 1
                part, held = [], 0
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--per-language", type=int, default=6000)
    parser.add_argument("--locale-dir", type=Path, default=Path("/usr/share/locale"))
    parser.add_argument("--join", type=Path, help="join this corpus's documents instead")
    parser.add_argument("--size", type=int, default=1700, help="bytes a joined document")
    args = parser.parse_args()
    if args.join is not None:
        written = join(args.join, args.out, args.size)
        print(f"multilingual: {written} joined documents in {args.out}", file=sys.stderr)
        return
    kept = build(args.out, args.per_language, args.locale_dir)
    print(
        f"multilingual: {sum(kept.values())} messages in {len(kept)} languages "
        f"({', '.join(f'{k} {v}' for k, v in kept.items())}) in {args.out}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
