"""What a worker process needs to count documents for a model: its tokenizer and words.

:func:`load_counter` reads them from a model file's bytes with numpy alone. Bulk predict
(:mod:`nbclass.models.scoring`) forks its counting workers as soon as it has them, before
it imports scipy and loads the whole model (:mod:`nbclass.modelfile.textfile`): scipy
alone takes longer to import than the workers need to count the first batches.
"""

from __future__ import annotations

import numpy as np

from ..errors import NbclassError
from ..text.tokenizer import TokenizerSettings
from ..text.vectorizer import TextCounter
from .fileformat import MODEL_SECTIONS, OPTIONAL_SECTIONS, parse, problem_of, refuse, whole


def load_counter(data: bytes, path: str = "<bytes>", parsed: tuple | None = None) -> TextCounter:
    """The :class:`nbclass.text.vectorizer.TextCounter` of the model in ``data``: its tokenizer
    and used vocabulary, read from the header and three sections without building the
    model (no dense counts, no scipy), for worker processes that count while the model
    loads. Every checksum is checked; :func:`nbclass.modelfile.textfile.loads` of the same
    bytes checks the rest, and :class:`nbclass.models.model.Classifier` that the two agree.
    ``parsed``: what :func:`nbclass.modelfile.fileformat.parse` gave for these bytes, if
    the caller has it (a worker forked by the process that checked them)."""
    if parsed is None:
        parsed = parse(data, path, MODEL_SECTIONS, OPTIONAL_SECTIONS)
    header, sections = parsed
    try:
        V = whole(header["n_features"], "n_features")
        tokenizer = TokenizerSettings.from_dict(header["tokenizer"])
        if tokenizer.scores_apart:  # without the symbols and n-grams the choice left out
            from .header import vocabulary_filter

            tokenizer = tokenizer.scoring(vocabulary_filter(header)[2])
        joined = sections["vocabulary"].tobytes()
        joined.decode("utf-8")  # UTF-8, or refused
        used = np.unpackbits(np.frombuffer(sections["used"], np.uint8), bitorder="little")
        if (joined.count(b"\x00") + 1 if V else len(joined)) != V or used.size != (
            V + 7
        ) // 8 * 8:
            raise ValueError("inconsistent section sizes")
        if used[:V].all():  # every word counted: the run table is made from the bytes
            return TextCounter(tokenizer, joined=(joined, V))
        return TextCounter(tokenizer, joined=used_words(joined, used[:V]))
    except (KeyError, TypeError, ValueError, UnicodeDecodeError, NbclassError) as exc:
        raise refuse(path, f"is not a valid nbclass model ({problem_of(exc)})") from None


def used_words(joined: bytes, used: np.ndarray) -> tuple[bytes, int]:
    """``(the used words' UTF-8 separated by NULs, their number)`` of the words ``joined``
    (UTF-8 separated by NULs, as a model file keeps them) that ``used`` (0 or 1, one per
    word) marks, in their order: the bytes of those words cut out with numpy, not a
    string made of each of the model's words (1.2 million for 20 Newsgroups with pairs).

    >>> used_words(b"a\\x00bc\\x00d", np.array([0, 1, 1], np.uint8))
    (b'bc\\x00d', 2)
    >>> used_words(b"a\\x00bc\\x00d", np.array([1, 1, 0], np.uint8))
    (b'a\\x00bc', 2)
    """
    n = int(np.count_nonzero(used))
    if not n:
        return b"", 0
    data = np.frombuffer(joined, np.uint8)
    # Each word's bytes and the NUL that ends it (the last word has none) kept or not.
    ends = np.append(np.flatnonzero(data == 0), data.size)
    sizes = np.diff(ends, prepend=-1)
    kept = data[np.repeat(used.astype(bool), sizes)[: data.size]].tobytes()
    return (kept[:-1] if kept.endswith(b"\x00") else kept), n
