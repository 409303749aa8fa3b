"""Tokenizer: text to a list of tokens, as the model's stored settings say.

Steps, in order: NUL characters become spaces (NUL separates words in the model file, so no
token may hold one); the text is lower-cased (unless ``lowercase`` is off); the token
pattern finds the tokens (``re.findall``; a pattern with one capturing group yields that
group); stop words are removed; word n-grams of every length in ``ngram_range`` are formed
from the remaining tokens and joined by single spaces (with ``ngram_doc_limit`` N, those
longer than one token only when the remaining tokens number at most N).

The default pattern, ``(?u)\\b\\w\\w+\\b``, takes runs of two or more Unicode word characters
(letters, digits, underscore) in any script: single characters ("a", "I", the "s" of "it's")
are mostly noise for topic classification, and punctuation is never a word. It is also
scikit-learn's default, which makes results easy to compare.

Scripts written without spaces between words (Chinese, Japanese, Thai, Lao, Khmer,
Myanmar: :data:`UNSPACED_RANGES`) make a whole clause one run. ``unspaced`` says how the
word characters of those scripts are cut, the default pattern's runs of every other script
staying words: ``"runs"`` (their runs of two or more, apart from the runs of other
scripts they touch), ``"characters"`` (each character a token) or ``"pairs"`` (each
character, and each two adjacent characters of a run joined by a space, ``"日 本"``,
added after the n-grams); ``"all"`` counts the three at once, told apart by the token
alone (:func:`unspaced_kinds`): the runs (n-grams formed from them), then the characters,
then the pairs. None (the default, and every model written before) is the pattern alone.

``symbols`` adds the tokens of ``(?u)\\w+|[^\\w\\s]+`` that the default pattern lacks:
each word character standing alone (``"i"``, ``"u"``, the ``"s"`` of ``"it's"``) and each
run of characters that are neither word characters nor spaces (``"?"``, ``"!!"``,
``":)"``, ``"..."``). They come after the words and their n-grams, stop words removed
from them too; n-grams are formed from the pattern's words only, so the words and their
n-grams are exactly those of the settings without ``symbols``
(:func:`symbol_tokens`). Off (the default, and every model written before) is the
pattern alone.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from itertools import islice

from ..errors import NbclassError, UsageError
from ..records import Record, field, replace

DEFAULT_TOKEN_PATTERN = r"(?u)\b\w\w+\b"
DEFAULT_NGRAM_RANGE = (1, 1)
# A fit that chooses (``--model auto``) with no ``--ngram-range`` counts word pairs too,
# in the documents of at most this many tokens (``ngram_doc_limit``), for the choice to
# keep them or not: a chat line, a message, a ticket's subject or a short question, whose
# pairs are few (the count stays near a count of words) and whose words say least alone.
CHOICE_NGRAM_RANGE = (1, 2)
CHOICE_NGRAM_DOC_LIMIT = 64
# With findall, "\w\w+" finds exactly the same tokens as the default pattern: a match can
# only start where a run of word characters starts (scanning resumes after a whole run or
# after a one-character run) and greedily ends where the run ends, so the \b assertions
# never reject anything. Without them the regex engine runs about a third faster.
_EQUIVALENT_PATTERNS = {DEFAULT_TOKEN_PATTERN: r"\w\w+"}
# On a text that is all ASCII, Unicode \w matches exactly the ASCII letters, digits and
# underscore, so the same pattern in ASCII mode finds the same tokens, about a third faster
# (the engine skips the Unicode tables). Most text is ASCII; str.isascii() is a flag read.
_ASCII_PATTERNS = {DEFAULT_TOKEN_PATTERN: r"\w\w+"}
# The patterns whose tokens, on ASCII text, are exactly the maximal runs of two or more
# ASCII word characters: :func:`ascii_splitter` finds those runs without the regex engine.
_RUN_PATTERNS = frozenset({DEFAULT_TOKEN_PATTERN})
# Patterns known to pass compile_pattern's checks (a test checks): a model with one of
# them skips the checks (parsing the pattern twice costs a one-document start 0.2 ms).
_VETTED_PATTERNS = frozenset({DEFAULT_TOKEN_PATTERN})
# The code points of the scripts written without spaces between words, by Unicode block:
# in these the default pattern makes a clause (up to the next punctuation) one token.
# Only their word characters (``\\w``) matter: combining marks (Thai vowel signs, the
# Khmer and Myanmar viramas, the kana voicing marks) are not word characters, and split a
# run as punctuation does, in every tokenization. Hangul is not among them: Korean writes
# spaces between words, and its runs are words with their particles.
UNSPACED_RANGES = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer Symbols
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3021, 0x3029),  # Hangzhou numerals
    (0x3031, 0x3035),  # kana repeat marks
    (0x3038, 0x303C),  # Hangzhou numerals, ideographic iteration marks
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana (with the prolonged sound mark)
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xA9E0, 0xA9FF),  # Myanmar Extended-B
    (0xAA60, 0xAA7F),  # Myanmar Extended-A
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0xFF66, 0xFF9F),  # Halfwidth Katakana
    (0x1B000, 0x1B16F),  # Kana Supplement, Kana Extended-A, Small Kana Extension
    (0x20000, 0x323AF),  # CJK Extensions B to H, Compatibility Ideographs Supplement
)
UNSPACED_MODES = ("runs", "characters", "pairs", "all")


def _ranges(ranges) -> str:
    return "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges)


def _outside(ranges) -> list[tuple[int, int]]:
    """The code points not in ``ranges`` (sorted, disjoint), as ranges."""
    out, start = [], 0
    for low, high in ranges:
        if low > start:
            out.append((start, low - 1))
        start = high + 1
    return out + [(start, 0x10FFFF)]


# The classes of the word characters (\w) of the unspaced scripts and of the others: a
# class [^\W...] holds the word characters outside what it lists.
_ALONE = f"[^\\W{_ranges(_outside(UNSPACED_RANGES))}]"
_OTHER = f"[^\\W{_ranges(UNSPACED_RANGES)}]"
# The tokens of each mode, found by findall: a run of two or more unspaced word
# characters ("runs") or one of them, else a run of two or more other word characters.
# A match starts only where a run of its kind starts (a run of one character fails there
# and scanning moves on), and ends where it ends, so the runs are maximal.
_UNSPACED_PATTERNS = {
    "runs": f"{_ALONE}{{2,}}|{_OTHER}{{2,}}",
    "characters": f"{_ALONE}|{_OTHER}{{2,}}",
    "pairs": f"{_ALONE}|{_OTHER}{{2,}}",
    "all": f"{_ALONE}{{2,}}|{_OTHER}{{2,}}",  # the runs; the characters and pairs after
}
# Each two adjacent unspaced word characters (overlapping: a lookahead).
_UNSPACED_PAIRS = f"(?=({_ALONE})({_ALONE}))"
MAX_NGRAM = 10  # the longest word n-gram a model may ask for
# A document with more n-grams than this gets them as an :class:`Ngrams` from a lazy
# tokenizer (make_tokenizer), made as they are read, never all held at once.
NGRAMS_LISTED = 1 << 16
RUN_MAX_NGRAM = 3  # the longest n-grams the numpy run counters make (ascii_splitter)
MAX_PATTERN_LENGTH = 1000  # characters of a token pattern
_WORD_BYTES = b"0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class TokenizerSettings(Record, frozen=True):
    """How a model turns text into tokens; stored in the model and reused by predict.

    Attributes
    ----------
    lowercase : bool
        Lower-case the text before matching.
    token_pattern : str
        Regular expression for one token.
    ngram_range : tuple of int (min_n, max_n)
        Word n-gram lengths to emit, inclusive.
    stop_words : tuple of str
        Tokens to drop before n-grams are formed (sorted; stored in the model).
    stop_words_source : str
        Where the stop words came from: ``"none"``, ``"english"`` or a file name.
    hash_features : int or None
        N: hash every token into one of N columns (:mod:`nbclass.text.hashing`), or None.
    unspaced : str or None
        How the scripts written without spaces are cut (:data:`UNSPACED_MODES`: runs,
        characters, or characters and pairs), with the default token pattern; None: the
        pattern alone.
    symbols : bool
        Add the single word characters and the runs of punctuation and other symbols
        (:func:`symbol_tokens`) to the default pattern's tokens.
    ngram_doc_limit : int or None
        N: the n-grams of ``ngram_range`` longer than one token are formed only in a
        document of at most N tokens (those the n-grams are made from: after lower-casing
        and the stop words); a longer document counts its single tokens only. Needs an
        n-gram range from 1 (:func:`validate_ngram_doc_limit`). None: no limit.
    """

    lowercase: bool = True
    token_pattern: str = DEFAULT_TOKEN_PATTERN
    ngram_range: tuple[int, int] = DEFAULT_NGRAM_RANGE
    stop_words: tuple[str, ...] = field(default=())
    stop_words_source: str = "none"
    hash_features: int | None = None
    unspaced: str | None = None
    symbols: bool = False
    ngram_doc_limit: int | None = None

    @property
    def symbol_entries(self) -> bool | str:
        """Whether the vocabulary's entries of one word character or none are the
        ``symbols`` (:mod:`nbclass.text.families`): not with hashing, whose entries
        name columns; ``"spaced"`` beside ``unspaced="all"``, where those holding a
        character of the scripts written without spaces are not (:func:`spaced_symbols`)."""
        if not self.symbols or self.hash_features is not None:
            return False
        return "spaced" if self.unspaced == "all" else True

    def scoring(self, features) -> TokenizerSettings:
        """The settings that count documents to score them with a model of these settings
        whose chosen feature families are ``features`` (None: every entry): without the
        symbols when the choice left them out, and without the word n-grams when it kept
        neither pairs nor longer n-grams. Their rows are in no feature set then, so no
        score, known-token count or calibration sees them, and predict tokenizes as for a
        model fitted without them (a document's tokens, known or not, are those it could
        be scored on); the model keeps its own settings (an update counts them, for the
        choice to be made again).

        >>> on = TokenizerSettings(symbols=True, ngram_range=(1, 2), ngram_doc_limit=64)
        >>> [on.scoring(f).symbols for f in (None, ("words",), ("words", "symbols"))]
        [True, False, True]
        >>> [on.scoring(f).ngram_range for f in (None, ("words",), ("words", "pairs"))]
        [(1, 2), (1, 1), (1, 2)]
        """
        if features is None or not self.scores_apart:
            return self
        out = self
        if self.symbols and "symbols" not in features:
            out = replace(out, symbols=False)
        if self.ngram_range[0] == 1 < self.ngram_range[1] and GRAM_FAMILIES.isdisjoint(features):
            out = replace(out, ngram_range=(1, 1), ngram_doc_limit=None)
        return out

    @property
    def scores_apart(self) -> bool:
        """Whether :meth:`scoring` may count with other settings than these, for some
        chosen features: the symbols, or word n-grams from single words, that a choice
        can leave out (a reader of a model file asks for its chosen features only then)."""
        return self.symbols or self.ngram_range[0] == 1 < self.ngram_range[1]

    def to_dict(self) -> dict:
        from dataclasses import asdict

        data = asdict(self)
        data["ngram_range"] = list(self.ngram_range)
        if self.hash_features is None:
            del data["hash_features"]  # files without hashing stay as they were
        if self.unspaced is None:
            del data["unspaced"]  # nor do files of the pattern alone
        if not self.symbols:
            del data["symbols"]  # nor files without the symbols
        if self.ngram_doc_limit is None:
            del data["ngram_doc_limit"]  # nor files of n-grams in every document
        data["stop_words"] = list(self.stop_words)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> TokenizerSettings:
        return cls(
            lowercase=bool(data["lowercase"]),
            token_pattern=str(data["token_pattern"]),
            ngram_range=(int(data["ngram_range"][0]), int(data["ngram_range"][1])),
            stop_words=tuple(str(w) for w in data["stop_words"]),
            stop_words_source=str(data["stop_words_source"]),
            hash_features=_optional_int(data.get("hash_features")),
            unspaced=_unspaced_mode(data.get("unspaced")),
            symbols=_flag(data.get("symbols", False), "symbols"),
            ngram_doc_limit=_optional_int(
                data.get("ngram_doc_limit"), "ngram_doc_limit", 1, "a number of tokens"
            ),
        )


# The feature families' names (:mod:`nbclass.text.families` registers them, in this order,
# and checks that they are these): a model file's chosen features are checked against
# them without the families' numpy code, which scoring one document does not load.
FAMILY_NAMES = ("words", "runs", "characters", "symbols", "pairs", "ngrams")
# The families of word n-grams longer than one word (and, beside ``unspaced``, the pairs of
# characters: entries of one space).
GRAM_FAMILIES = frozenset({"pairs", "ngrams"})


def check_family_names(names) -> tuple[str, ...]:
    """``names`` (from a model file) as a tuple of distinct family names
    (:data:`FAMILY_NAMES`); ``ValueError`` otherwise.

    >>> check_family_names(["words", "symbols"])
    ('words', 'symbols')
    """
    if not isinstance(names, list) or not 0 < len(names) <= len(FAMILY_NAMES):
        raise ValueError("the feature families are not a short list")
    if not all(isinstance(n, str) and n in FAMILY_NAMES for n in names) or len(
        set(names)
    ) < len(names):
        raise ValueError("the feature families are not distinct known names")
    return tuple(names)


def _optional_int(
    value, name: str = "hash_features", least: int = 2, what: str = "a number of columns"
) -> int | None:  # fmt: skip
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise ValueError(f"{name} {value!r} is not {what}")
    return value


def _flag(value, name: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} {value!r} is not true or false")
    return value


# The tokens ``symbols`` adds (:func:`symbol_tokens`): those of ``\w+|[^\w\s]+`` that
# ``\w\w+`` lacks, a word character alone or a run of characters neither word nor space.
# The first alternative matches a run of two or more word characters too (to pass it
# whole); only the matches of one character, or of the second alternative, are kept.
# Compiled when first used: one document's predict imports this module and rarely needs them.
_SYMBOL_PATTERNS: list = []


def _symbol_patterns() -> tuple:
    """``(symbols, word_start)``, the two compiled patterns."""
    if not _SYMBOL_PATTERNS:
        _SYMBOL_PATTERNS[:] = re.compile(r"\w+|[^\w\s]+"), re.compile(r"\w")
    return tuple(_SYMBOL_PATTERNS)


def symbol_tokens(text: str) -> list[str]:
    """The tokens ``symbols`` adds to the default pattern's in ``text`` (already
    lower-cased as the settings say, NUL characters made spaces): the matches of
    ``(?u)\\w+|[^\\w\\s]+`` that are one character long or hold no word character, in order.

    >>> symbol_tokens("i'm :) ok?! u 2 x_y, 日")
    ['i', "'", 'm', ':)', '?!', 'u', '2', ',', '日']
    """
    symbols, word_start = _symbol_patterns()
    word = word_start.match
    return [t for t in symbols.findall(text) if len(t) == 1 or word(t) is None]


# A character of a script written without spaces: with ``unspaced="all"`` the symbols
# holding one are left out (those scripts' characters are the ``unspaced`` tokens').
_UNSPACED_CHARACTER: list = []


def spaced_symbols(found: list[str]) -> list[str]:
    """The symbols of ``found`` that hold no character of a script written without
    spaces (:data:`UNSPACED_RANGES`): those ``symbols`` adds beside ``unspaced="all"``,
    whose characters of those scripts are its own tokens.

    >>> spaced_symbols(symbol_tokens("日本 a 日 ?。 ・! ok?"))
    ['a', '?。', '?']
    """
    if not _UNSPACED_CHARACTER:
        _UNSPACED_CHARACTER.append(re.compile(f"[{_ranges(UNSPACED_RANGES)}]").search)
    held = _UNSPACED_CHARACTER[0]
    return [t for t in found if t.isascii() or held(t) is None]


def is_symbol(entry: str) -> bool:
    """Whether ``entry`` is a token that ``symbols`` adds (:func:`symbol_tokens`): no
    space, and one word character or no word character at all.

    >>> [is_symbol(e) for e in ["a", "?!", ":)", "ab", "a?", "a b", ""]]
    [True, True, True, False, False, False, False]
    """
    symbols, word_start = _symbol_patterns()
    return symbols.fullmatch(entry) is not None and (
        len(entry) == 1 or word_start.match(entry) is None
    )


def unspaced_kinds(vocabulary) -> dict[str, list[bool]]:
    """Which entries of ``vocabulary`` are tokens of each tokenization of the scripts
    written without spaces, told apart by the entry alone: ``"runs"`` (two or more of
    their characters and nothing else), ``"characters"`` (one of them), ``"pairs"`` (two,
    joined by a space); ``"other"`` for every other entry (words of other scripts, word
    n-grams). Each a list of bool, one per entry, every entry in exactly one.

    >>> unspaced_kinds(["ab", "日本", "日", "日 本", "ab 日本", "x日"])["runs"]
    [False, True, False, False, False, False]
    """
    alone = re.compile(f"{_ALONE}+").fullmatch
    kinds: dict[str, list[bool]] = {"runs": [], "characters": [], "pairs": [], "other": []}
    for entry in vocabulary:
        kind = "other"
        if alone(entry):
            kind = "characters" if len(entry) == 1 else "runs"
        elif len(entry) == 3 and entry[1] == " " and alone(entry[0]) and alone(entry[2]):
            kind = "pairs"
        for name, found in kinds.items():
            found.append(name == kind)
    return kinds


def _unspaced_mode(value) -> str | None:
    if value is None or (isinstance(value, str) and value in UNSPACED_MODES):
        return value
    raise ValueError(f"unspaced {value!r} is not one of {', '.join(UNSPACED_MODES)}")


def validate_unspaced(settings: TokenizerSettings) -> None:
    """Refuse an ``unspaced`` mode that is not one, or one given with another pattern;
    and ``symbols`` with another pattern or with an ``unspaced`` mode."""
    if settings.symbols:
        if settings.token_pattern != DEFAULT_TOKEN_PATTERN:
            raise UsageError(
                "--symbols adds single characters and punctuation to the default token "
                "pattern's words; with --token-pattern the pattern says what a token is: "
                "give one or the other"
            )
        if settings.unspaced not in (None, "all"):  # "all": fit's default count, not an option
            raise UsageError(
                "--symbols cannot be combined with --unspaced: leave out one of them"
            )
    mode = settings.unspaced
    if mode is None:
        return
    if mode not in UNSPACED_MODES:
        raise UsageError(
            f"--unspaced {mode!r} is not a tokenization: give one of {', '.join(UNSPACED_MODES)}"
        )
    if settings.token_pattern != DEFAULT_TOKEN_PATTERN:
        raise UsageError(
            "--unspaced cuts the default token pattern's runs; with --token-pattern the "
            "pattern says what a token is: give one or the other"
        )


def load_stop_words(spec: str, lowercase: bool = True) -> tuple[tuple[str, ...], str]:
    """Resolve ``--stop-words english|FILE|none`` to ``(sorted words, source)``.

    A FILE holds one stop word per line (blank lines and lines starting with ``#`` are
    ignored), at most :data:`nbclass.reading.limits.MAX_STOP_WORDS_BYTES` (16 MiB): a larger file,
    or an endless one, is a :class:`UsageError`. Words are lower-cased when the tokenizer
    lower-cases.
    """
    if spec == "none":
        return (), "none"
    if spec == "english":
        from .stop_words import ENGLISH

        return tuple(sorted(ENGLISH)), "english"
    from ..reading.limits import MAX_STOP_WORDS_BYTES, format_limit, open_named, read_bounded

    try:
        with os.fdopen(open_named(spec), "rb") as handle:
            data = read_bounded(
                handle,
                MAX_STOP_WORDS_BYTES,
                f"stop-word file {spec!r} is larger than {format_limit(MAX_STOP_WORDS_BYTES)}: "
                "give a file with one word per line",
            )
    except OSError as exc:
        raise UsageError(
            f"cannot read stop-word file {spec!r} ({exc.strerror}): give 'english', 'none' "
            "or a file with one word per line"
        ) from None
    except NbclassError as exc:
        raise UsageError(str(exc)) from None
    lines = data.decode("utf-8", "replace").splitlines()
    words = {ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")}
    if lowercase:
        words = {w.lower() for w in words}
    return tuple(sorted(words)), os.path.basename(spec)


def compile_pattern(pattern: str) -> re.Pattern:
    """Compile a token pattern, refusing ones that cannot tokenize or that may take
    exponential time (:func:`pattern_hazard`)."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise UsageError(
            f"--token-pattern is {len(pattern)} characters long; give at most "
            f"{MAX_PATTERN_LENGTH}"
        )
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise UsageError(
            f"--token-pattern {pattern!r} is not a valid regular expression: {exc}"
        ) from None
    hazard = pattern_hazard(pattern)
    if hazard:
        advice = _ADVICE.get(hazard, _ADVICE[None])
        raise UsageError(f"--token-pattern {pattern!r} {hazard}, {advice}")
    if regex.groups > 1:
        raise UsageError(
            f"--token-pattern {pattern!r} has {regex.groups} capturing groups; use at most one "
            "(write (?:...) for a group that does not capture)"
        )
    if regex.match("") is not None:
        # A pattern that matches the empty string makes empty tokens everywhere.
        raise UsageError(
            f"--token-pattern {pattern!r} matches the empty string; make it match one or "
            "more characters"
        )
    return regex


def validate_ngram_range(ngram_range: tuple[int, int]) -> None:
    low, high = ngram_range
    if low < 1 or high < low or high > MAX_NGRAM:
        raise UsageError(
            f"--ngram-range {low},{high} is not valid: give MIN,MAX with 1 <= MIN <= MAX "
            f"<= {MAX_NGRAM}"
        )


def validate_ngram_doc_limit(settings: TokenizerSettings) -> None:
    """Refuse an ``ngram_doc_limit`` below 1, or one with an n-gram range from above 1
    (a long document would have no token at all)."""
    limit = settings.ngram_doc_limit
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise UsageError(
            f"--ngram-doc-limit {limit!r} is not valid: give a number of tokens N >= 1"
        )
    low, high = settings.ngram_range
    if low > 1:
        raise UsageError(
            f"--ngram-doc-limit keeps a longer document's single words, which --ngram-range "
            f"{low},{high} leaves out: give --ngram-range 1,{high}, or leave out "
            "--ngram-doc-limit"
        )


MAX_FAILING_REPEAT = 100  # repetitions of a part that a later part of a pattern may undo
_ADVICE = {  # what to do about each hazard of pattern_hazard
    None: "which can take exponential time on some texts; write it without (e.g. \\w+ "
    "instead of (\\w+)+)",
    "repeats the same characters twice in a row": "which can take time a power of the "
    "length of some texts; write one repeat (e.g. \\w+ instead of \\w*\\w*)",
    "repeats a part without a bound before a part that can fail": "which can take time "
    f"quadratic in the length of some texts; bound the repeat to at most "
    f"{MAX_FAILING_REPEAT} (e.g. \\w{{1,{MAX_FAILING_REPEAT}}}x instead of \\w+x)",
}
# Characters that stand for all others when two parts of a pattern are compared: ASCII,
# Latin-1 and Latin Extended, and a letter, a digit and a space of other scripts.
_PROBES = "".join(map(chr, range(0x250))) + (
    "\u0391\u03b1\u0410\u0430\u05d0\u0627\u0660\u0905\u0966\u0e01\u1e00\u2000\u2028"
    "\u3000\u3042\u30a2\u4e00\uac00\uff10\uff21\U0001d400\U0001f600"
)


def pattern_hazard(pattern: str) -> str | None:
    """What makes ``pattern`` (a valid regular expression) risky, or None.

    Python's regex engine backtracks: a repeated part that can itself match in many ways
    (``(\\w+)+``, ``(a|ab)*``, ``\\w*\\w*``) or a back-reference can take time
    exponential in the length of a text that almost matches, or a power of it; and an
    unbounded repeat followed by a part that can fail (``\\w+x``) is tried again from
    every character of a long run: time quadratic in its length. Refused, wherever it
    is in the pattern:

    - a repeat (``*``, ``+``, ``{m,n}`` with n > 1) inside a repeat;
    - an alternation ``|`` inside a repeat (an alternation of single characters is a
      character class, which is fine);
    - a back-reference (``\\1``, ``(?P=name)``, ``(?(1)...)``);
    - two repeats in a row that can match the same character, unless a part that must
      match a character the first cannot match stands between them (``\\w+@\\w+`` is
      fine, ``\\w*\\w*`` and ``\\w+_?\\w+`` are not);
    - a repeat of more than :data:`MAX_FAILING_REPEAT` (``+``, ``*``, ``{m,}``) followed,
      anywhere later, by a part that can fail after it: one that must match a character,
      or a lookaround (``\\b`` after a repeat of exactly ``\\w`` never fails, nor does a
      part that may match nothing), unless the pattern cannot start inside a run of
      what the repeat matches (it begins with ``\\b`` before a repeat of word
      characters, with ``^``, or with a part the repeat cannot match: ``#\\w+x``).
      ``\\w{1,100}x`` is the bounded form of ``\\w+x``.

    >>> pattern_hazard(r"(?u)\\b\\w\\w+\\b") is None
    True
    >>> pattern_hazard(r"(?u)(\\w+)+!")
    'repeats a part that is itself repeated'
    >>> pattern_hazard(r"\\w+x")
    'repeats a part without a bound before a part that can fail'
    """
    try:
        from re import _compiler as compiler
        from re import _constants as c
        from re import _parser as parser
    except ImportError:  # pragma: no cover - Python 3.10
        import sre_compile as compiler
        import sre_constants as c
        import sre_parse as parser

    repeats = {c.MAX_REPEAT, c.MIN_REPEAT}
    repeats |= {getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT)}
    tree = parser.parse(pattern)
    flags = tree.state.flags

    def chars(items) -> frozenset:
        """The probe characters that some character-matching part of ``items`` (each a
        leaf: a literal, a class, ``.``) can match."""
        found: set = set()
        for item in items:
            sub = parser.SubPattern(tree.state, [item])
            try:
                regex = compiler.compile(sub, flags)
            except Exception:  # pragma: no cover - a part that cannot stand alone
                return frozenset(_PROBES)
            found.update(ch for ch in _PROBES if regex.fullmatch(ch))
        return frozenset(found)

    def leaves(items):
        """The parts of ``items`` that match characters, through groups and repeats."""
        for op, av in items:
            if op in repeats:
                yield from leaves(av[2])
            elif op is c.SUBPATTERN:
                yield from leaves(av[3])
            elif op is c.BRANCH:
                for alternative in av[1]:
                    yield from leaves(alternative)
            elif op is getattr(c, "ATOMIC_GROUP", None):
                yield from leaves(av)
            elif op not in (c.AT, c.ASSERT, c.ASSERT_NOT):
                yield op, av

    def width(item) -> int:
        return parser.SubPattern(tree.state, [item]).getwidth()[0]

    def word_only(item) -> bool:
        """Whether ``item`` is a repeat of exactly ``\\w``."""
        return chars(leaves([item])) == chars([(c.IN, [(c.CATEGORY, c.CATEGORY_WORD)])])

    def can_fail(items, after) -> bool:
        """Whether a part of ``items`` can fail right after the repeat ``after``."""
        for op, av in items:
            if op is c.AT:
                if av in (c.AT_BOUNDARY, c.AT_UNI_BOUNDARY, c.AT_LOC_BOUNDARY):
                    if word_only(after):
                        continue
                return True
            if op in (c.ASSERT, c.ASSERT_NOT):
                return True
            if width((op, av)) > 0:
                return True
        return False

    def guarded(repeat) -> bool:
        """Whether the pattern cannot start inside a run of what ``repeat`` matches: it
        begins with ``\\b`` (or ``^``) and ``repeat`` matches word characters only, or
        with a part that must match a character ``repeat`` cannot. Then each run is
        tried once, not from each of its characters."""
        op, av = tree[0] if len(tree) else (None, None)
        inside = chars(leaves([repeat]))
        if op is c.AT:
            if av in (c.AT_BEGINNING_STRING,) or (
                av is c.AT_BEGINNING and not flags & re.MULTILINE
            ):
                return True
            word = chars([(c.IN, [(c.CATEGORY, c.CATEGORY_WORD)])])
            return av in (c.AT_BOUNDARY, c.AT_UNI_BOUNDARY, c.AT_LOC_BOUNDARY) and (
                inside <= word
            )
        return op is not None and width((op, av)) > 0 and not (chars(leaves([(op, av)])) & inside)

    def walk(items, repeated: bool, tail) -> str | None:
        """``tail``: the parts that follow ``items`` in the pattern (what a repeat at
        the end of ``items`` is followed by)."""
        pending = None  # the last repeat that a later part could share characters with
        between: list = []
        for i, (op, av) in enumerate(items):
            rest = list(items[i + 1 :]) + list(tail)
            found = None
            if op in repeats:
                low, high, sub = av
                many = high == c.MAXREPEAT or high > 1
                if many and repeated:
                    return "repeats a part that is itself repeated"
                if many and pending is not None:
                    first = chars(leaves([pending]))
                    separated = any(
                        width(part) > 0 and not (chars(leaves([part])) & first)
                        for part in between
                    )
                    if not separated and first & chars(leaves(sub)):
                        return "repeats the same characters twice in a row"
                found = walk(sub, repeated or many, rest)
                unbounded = high == c.MAXREPEAT or high > MAX_FAILING_REPEAT
                if (
                    not found and many and unbounded and can_fail(rest, (op, av))
                    and not guarded((op, av))
                ):  # fmt: skip
                    return "repeats a part without a bound before a part that can fail"
                if many:
                    pending, between = (op, av), []
                    if found:
                        return found
                    continue
            elif op is c.BRANCH:
                if repeated:
                    return "repeats an alternation"
                for alternative in av[1]:
                    found = found or walk(alternative, repeated, rest)
            elif op is c.SUBPATTERN:
                found = walk(av[3], repeated, rest)
            elif op in (c.ASSERT, c.ASSERT_NOT):
                found = walk(av[1], repeated, ())
            elif op in (c.GROUPREF, c.GROUPREF_EXISTS, getattr(c, "GROUPREF_IGNORE", None)):
                return "refers back to a group"
            elif op is getattr(c, "ATOMIC_GROUP", None):
                found = walk(av, repeated, rest)
            if found:
                return found
            if pending is not None:
                between.append((op, av))
        return None

    return walk(tree, False, ())


class AsciiSplitter:
    """The tokenizer of the default pattern, on ASCII bytes, without a regex.

    ``table`` is a ``bytes.translate`` table that maps each ASCII word character to
    itself (or its lower case, as the settings say) and every other byte to a space:
    the maximal runs of non-space bytes of a translated text (:meth:`split`) are its
    tokens, except that runs of one character and stop words are among them too; they
    are in ``dropped`` (as bytes), and a caller that counts the runs leaves those out,
    which gives exactly the counts of the tokens. Decoded with an ASCII-compatible
    encoding, a token is the same word the regex finds in the text.
    :mod:`nbclass.text.runs` counts these runs with numpy, and counts texts of any script
    the same way from ``lowercase`` and ``stop_words`` (the settings' own).

    Examples
    --------
    >>> splitter = ascii_splitter(TokenizerSettings(stop_words=("the",)), "utf-8")
    >>> splitter.split(b"The server_2 is DOWN, again!")
    [b'the', b'server_2', b'is', b'down', b'again']
    >>> sorted(w for w in splitter.dropped if len(w) > 1)
    [b'the']
    """

    # A plain class, not a dataclass: this module is imported to score one document, which
    # never uses a splitter, and a dataclass compiles its methods when it is defined.
    __slots__ = (
        "table", "dropped", "lowercase", "stop_words", "ngram_range", "unspaced", "symbols",
        "ngram_doc_limit",
    )  # fmt: skip

    def __init__(
        self,
        table: bytes,
        dropped: frozenset[bytes],
        lowercase: bool = True,
        stop_words: tuple[str, ...] = (),
        ngram_range: tuple[int, int] = (1, 1),
        unspaced: str | None = None,
        symbols: bool = False,
        ngram_doc_limit: int | None = None,
    ):
        self.table, self.dropped = table, dropped
        self.lowercase, self.stop_words = lowercase, stop_words
        self.ngram_range = ngram_range
        self.unspaced = unspaced  # the settings' own: ASCII text has no unspaced script
        self.symbols = symbols  # the settings' own: the run counters add the symbols
        self.ngram_doc_limit = ngram_doc_limit  # the settings' own, applied by the counters

    def split(self, data: bytes) -> list[bytes]:
        """The runs of ``data`` (ASCII bytes): the single-word tokens, with the dropped
        ones (the n-grams of ``ngram_range`` are made from the tokens, by the counter)."""
        return data.translate(self.table).split()


def ascii_splitter(settings: TokenizerSettings, encoding: str) -> AsciiSplitter | None:
    """An :class:`AsciiSplitter` for ``settings`` when one gives the same tokens, else None.

    It does for the default token pattern, its words and their n-grams (no hashing),
    with any ``unspaced`` mode (ASCII text holds none of those scripts; the run counters
    make the n-grams of the words alone, before the characters and pairs), read with an
    ``encoding`` that decodes every ASCII byte to the same character (UTF-8, Latin-1,
    cp1252, ...; not UTF-16). The splitter finds the words;
    the run counters join consecutive ones into the n-grams of ``settings.ngram_range``
    (:func:`nbclass.text.runs.with_ngrams`), up to :data:`RUN_MAX_NGRAM` words: they make
    every n-gram of a chunk of text at once, in memory growing with the square of the
    longest n (a document of 700 KB at 1,10 took 880 MB), where the tokenizer makes a
    long document's n-grams one at a time (:class:`Ngrams`).
    """
    if (
        settings.token_pattern not in _RUN_PATTERNS
        or settings.hash_features is not None
        or settings.ngram_range[1] > RUN_MAX_NGRAM
        or not _ascii_compatible(encoding)
    ):
        return None
    table = bytearray(b" " * 256)
    for byte in _WORD_BYTES:
        table[byte] = byte
    if settings.lowercase:
        table[ord("A") : ord("Z") + 1] = b"abcdefghijklmnopqrstuvwxyz"
    singles = {bytes([table[byte]]) for byte in _WORD_BYTES}
    stop = {word.encode("ascii") for word in settings.stop_words if word.isascii()}
    return AsciiSplitter(
        bytes(table), frozenset(singles | stop), settings.lowercase, settings.stop_words,
        tuple(settings.ngram_range), settings.unspaced, settings.symbols,
        settings.ngram_doc_limit,
    )


def _ascii_compatible(encoding: str) -> bool:
    """Whether ``encoding`` decodes every ASCII byte, alone, to the same character."""
    ascii_bytes = bytes(range(128))
    try:
        return ascii_bytes.decode(encoding) == ascii_bytes.decode("ascii")
    except (LookupError, UnicodeDecodeError):
        return False


def make_tokenizer(settings: TokenizerSettings, lazy: bool = False) -> Callable[[str], list[str]]:
    """Build the function ``text -> list of tokens`` for ``settings``.

    With ``hash_features``, the tokens are column names and the function is a
    :class:`nbclass.text.hashing.HashedTokenizer`.

    Examples
    --------
    >>> tokenize = make_tokenizer(TokenizerSettings(ngram_range=(1, 2)))
    >>> tokenize("The server is DOWN again")
    ['the', 'server', 'is', 'down', 'again', 'the server', 'server is', 'is down', 'down again']
    >>> short = make_tokenizer(TokenizerSettings(ngram_range=(1, 2), ngram_doc_limit=3))
    >>> short("Server down"), short("The server is DOWN again")
    (['server', 'down', 'server down'], ['the', 'server', 'is', 'down', 'again'])

    With n-grams and ``lazy``, a document of more than :data:`NGRAMS_LISTED` of them gets
    an :class:`Ngrams` instead of a list: the same tokens in the same order, made as they
    are read, so that counting a long document against a model's vocabulary never holds
    every n-gram string of every length at once. It is for callers that read the tokens
    once (hashing) or keep only the words of a fixed vocabulary (predict); learning keeps
    the list, which it reads twice (the counts, then the distinct words).
    """
    validate_ngram_range(settings.ngram_range)
    validate_ngram_doc_limit(settings)
    validate_unspaced(settings)
    if settings.token_pattern not in _VETTED_PATTERNS:
        compile_pattern(settings.token_pattern)
    pattern = _EQUIVALENT_PATTERNS.get(settings.token_pattern, settings.token_pattern)
    unspaced = settings.unspaced
    if unspaced is not None:  # on ASCII text (no unspaced script) the tokens are \w\w+'s
        pattern = _UNSPACED_PATTERNS[unspaced]
    findall = re.compile(pattern).findall
    ascii_pattern = _ASCII_PATTERNS.get(settings.token_pattern)
    ascii_findall = re.compile(ascii_pattern, re.ASCII).findall if ascii_pattern else None
    lowercase = settings.lowercase
    stop = frozenset(settings.stop_words)
    min_n, max_n = settings.ngram_range
    limit = settings.ngram_doc_limit

    def words(text: str) -> list[str]:
        if "\x00" in text:
            text = text.replace("\x00", " ")
        if lowercase:
            text = text.lower()
        if ascii_findall is not None and text.isascii():
            tokens = ascii_findall(text)
        else:
            tokens = findall(text)
        if stop:
            tokens = [t for t in tokens if t not in stop]
        return tokens

    if settings.hash_features is not None:
        from .hashing import HashedTokenizer

        plain = make_tokenizer(replace(settings, hash_features=None), lazy=True)
        return HashedTokenizer(plain, settings.hash_features)
    if unspaced in ("pairs", "all"):
        tokenize = _with_pairs(
            words, (min_n, max_n), lowercase, stop if unspaced == "all" else None, limit
        )
        if settings.symbols:  # unspaced "all" (validate_unspaced): the symbols after
            return _with_symbols(tokenize, (1, 1), lowercase, stop, False, spaced=True)
        return tokenize
    if settings.symbols:
        return _with_symbols(words, (min_n, max_n), lowercase, stop, lazy, limit=limit)
    if (min_n, max_n) == (1, 1):
        return words

    def ngrams(text: str) -> list[str] | Ngrams:
        tokens = words(text)
        if limit is not None and len(tokens) > limit:
            return tokens  # a long document: its single words only (min_n is 1)
        if lazy:
            lengths = range(min_n, min(max_n, len(tokens)) + 1)
            total = sum(len(tokens) - n + 1 for n in lengths)
            if total > NGRAMS_LISTED:
                return Ngrams(tokens, lengths, total)
        return _ngrams(tokens, min_n, max_n)

    return ngrams


def _with_symbols(
    words, ngram_range: tuple[int, int], lowercase: bool, stop, lazy: bool, spaced: bool = False,
    limit: int | None = None,
):  # fmt: skip
    """The tokenizer of ``symbols``: ``words``' tokens and their n-grams, then the
    single word characters and runs of symbols of the text (:func:`symbol_tokens`) that
    are not stop words. With ``lazy``, a document of more than :data:`NGRAMS_LISTED`
    n-grams gets an :class:`Ngrams` holding the symbols after them. ``spaced``: beside
    ``unspaced="all"`` (``words`` its tokenizer), only the symbols that hold no character
    of a script written without spaces (:func:`spaced_symbols`). ``limit``: the
    ``ngram_doc_limit`` (a document of more tokens gets no n-gram; the symbols still)."""
    min_n, max_n = ngram_range

    def tokenize(text: str) -> list[str] | Ngrams:
        tokens = words(text)
        if "\x00" in text:
            text = text.replace("\x00", " ")
        if lowercase:
            text = text.lower()
        found = symbol_tokens(text)
        if spaced:
            found = spaced_symbols(found)
        if stop:
            found = [t for t in found if t not in stop]
        if (min_n, max_n) != (1, 1) and (limit is None or len(tokens) <= limit):
            lengths = range(min_n, min(max_n, len(tokens)) + 1)
            total = sum(len(tokens) - n + 1 for n in lengths)
            if lazy and total > NGRAMS_LISTED:
                return Ngrams(tokens, lengths, total + len(found), found)
            tokens = _ngrams(tokens, min_n, max_n)
        tokens.extend(found)
        return tokens

    return tokenize


def _ngrams(tokens: list[str], min_n: int, max_n: int) -> list[str]:
    """The word n-grams of ``tokens`` of every length in [min_n, max_n], each length in
    turn, joined by single spaces."""
    out = tokens[:] if min_n == 1 else []
    for n in range(max(min_n, 2), min(max_n, len(tokens)) + 1):
        out.extend(_windows(tokens, n))
    return out


def _with_pairs(
    words, ngram_range: tuple[int, int], lowercase: bool, stop=None, limit: int | None = None
):  # fmt: skip
    """The tokenizer of ``unspaced="pairs"``: ``words``' tokens (and their n-grams), then
    each two adjacent unspaced word characters of the text, joined by a space. Pairs are
    not stop words' business: a stop word is one token, a pair is two.

    With ``stop`` (a set, maybe empty), that of ``unspaced="all"``: ``words`` are the
    runs, and each unspaced character that is not a stop word comes before the pairs.
    ``limit``: the ``ngram_doc_limit``, which bounds the word n-grams (a document of
    more of ``words``' tokens gets none), not the characters' pairs."""
    pairs = re.compile(_UNSPACED_PAIRS).findall
    characters = None if stop is None else re.compile(_ALONE).findall
    min_n, max_n = ngram_range

    def tokenize(text: str) -> list[str]:
        tokens = words(text)
        if (min_n, max_n) != (1, 1) and (limit is None or len(tokens) <= limit):
            tokens = _ngrams(tokens, min_n, max_n)
        if "\x00" in text:
            text = text.replace("\x00", " ")
        if lowercase:
            text = text.lower()
        if characters is not None:
            found = characters(text)
            tokens.extend([c for c in found if c not in stop] if stop else found)
        tokens.extend(f"{a} {b}" for a, b in pairs(text))
        return tokens

    return tokenize


def _windows(tokens: list[str], n: int) -> Iterator[str]:
    """The n-grams of length ``n`` >= 2 of ``tokens``, in order: ``tokens[i : i + n]``
    joined by single spaces, for i = 0 .. len(tokens) - n."""
    return map(" ".join, zip(*(islice(tokens, k, None) for k in range(n))))


class Ngrams:
    """The word n-grams of a long document, made as they are read.

    A sequence of the same tokens, in the same order, as the list the n-gram tokenizer
    gives a short document (the words, then the n-grams of each length): ``len`` is
    known without making them, and each pass (``iter``, a ``Counter``, ``set``) makes them
    again, one at a time. ``Counter(filter(vocabulary.__contains__, ngrams))`` then holds
    only the n-grams a model knows, whatever the n-gram range: the memory of counting a
    document for a model is its words and their known n-grams. :func:`token_groups`
    counts them a part at a time.

    Examples
    --------
    >>> grams = Ngrams(["a", "b", "c"], range(1, 3), 5)
    >>> len(grams), list(grams), grams == ["a", "b", "c", "a b", "b c"]
    (5, ['a', 'b', 'c', 'a b', 'b c'], True)
    """

    __slots__ = ("words", "lengths", "total", "extra")

    def __init__(self, words: list[str], lengths: range, total: int, extra: list[str] = ()):
        self.words, self.lengths, self.total = words, lengths, total
        self.extra = extra  # tokens after the n-grams (the symbols), in ``total``

    def __len__(self) -> int:
        return self.total

    def __iter__(self) -> Iterator[str]:
        for n in self.lengths:
            yield from self.of_length(n)
        yield from self.extra

    def of_length(self, n: int) -> Iterator[str]:
        """The n-grams of length ``n``, in order."""
        return iter(self.words) if n == 1 else _windows(self.words, n)

    def __eq__(self, other) -> bool:
        if isinstance(other, (list, Ngrams)):
            return len(self) == len(other) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        low, high = self.lengths.start, self.lengths.stop - 1
        return f"Ngrams({len(self.words)} words, lengths {low}..{high})"


def token_groups(tokens: list[str] | Ngrams) -> Iterator[Counter]:
    """Counters whose sum counts ``tokens``: one for a list; for an :class:`Ngrams`, one
    for each :data:`NGRAMS_LISTED` n-grams of each length in turn, so that a caller looking
    each distinct token up holds at most that many at a time. A token may be in more
    than one group (the same n-gram further on, or a word equal to an n-gram when the
    token pattern matches a space)."""
    if isinstance(tokens, Ngrams):
        for n in tokens.lengths:
            grams = tokens.of_length(n)
            while group := Counter(islice(grams, NGRAMS_LISTED)):
                yield group
        if tokens.extra:
            yield Counter(tokens.extra)
    else:
        yield Counter(tokens)
