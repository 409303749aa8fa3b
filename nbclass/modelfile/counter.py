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
        if tokenizer.symbols:  # counted without the symbols the choice left out
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
        words = joined.decode("utf-8").split("\x00") if V else []
        return TextCounter(tokenizer, [words[j] for j in np.flatnonzero(used[:V]).tolist()])
    except (KeyError, TypeError, ValueError, UnicodeDecodeError, NbclassError) as exc:
        raise refuse(path, f"is not a valid nbclass model ({problem_of(exc)})") from None
