"""The exit code of each class for ``predict --exit-code``: given once, kept for good.

A script that routes documents by ``predict --exit-code`` branches on numbers, so a
class's number must never move. A model keeps a **code map**, class name -> exit code:

- a fit gives the classes 10, 11, 12, ... in sorted order (or takes an explicit map,
  ``fit --exit-code-map``, and gives the classes it leaves out the smallest free codes,
  in sorted order);
- ``fit --update``, ``merge``, ``sync``: a class new to the model takes the smallest
  code still free; the others keep theirs;
- ``unlearn``, ``sync``: a class left with no document keeps its code in the map
  (*retired*): no other class ever takes it, and the class gets it back if it returns;
- ``merge``: the first model's codes win; a class only a later model has keeps its code
  there when that is still free, else takes the smallest free one.

The codes are 10 to 124: 0 to 3 and 9 mean success, errors, a failed ``check`` and
unsure; from 125 a shell reports a command it could not run (126, 127) or one killed by
a signal (128 + n). That leaves 115 codes: past them a class gets none, and
``predict --exit-code`` refuses a model with a class that has none.

The map is history, not a function of the counts: a fresh fit gives sorted codes, so
a model whose map is exactly that (every model whose classes all came in one fit, or
arrived in sorted order) stores nothing, and its file is the file a fresh fit writes;
any other map is stored in the file's header (``exit_codes``). A file without one
means sorted codes, as it always did.

Plain Python (no numpy): the one-document path (:mod:`nbclass.modelfile.quick`) reads
the map too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import UsageError

FIRST_CODE = 10
LAST_CODE = 124  # 125 and up: a command a shell could not run, or a signal
CODES = range(FIRST_CODE, LAST_CODE + 1)


def sorted_codes(classes: Iterable[str]) -> dict[str, int]:
    """10, 11, 12, ... for the classes in sorted order (the first 115 of them).

    >>> sorted_codes(["outage", "billing", "account"])
    {'account': 10, 'billing': 11, 'outage': 12}
    """
    return dict(zip(sorted(classes), CODES))


def extended(codes: Mapping[str, int], classes: Iterable[str]) -> dict[str, int]:
    """``codes`` with each class of ``classes`` it lacks given the smallest free code, in
    sorted order; a class finds none once all 115 are taken.

    >>> extended({"billing": 11, "outage": 12}, ["api", "billing", "zebra"])
    {'billing': 11, 'outage': 12, 'api': 10, 'zebra': 13}
    """
    result = dict(codes)
    free = iter(sorted(set(CODES).difference(result.values())))
    for name in sorted(set(classes).difference(result)):
        code = next(free, None)
        if code is None:
            break
        result[name] = code
    return result


def effective(stored: Mapping[str, int] | None, classes: Iterable[str]) -> dict[str, int]:
    """The code map of a model whose file stores ``stored`` (None: sorted codes)."""
    return sorted_codes(classes) if stored is None else dict(stored)


def stored_form(codes: Mapping[str, int], classes: Iterable[str]) -> dict[str, int] | None:
    """What a model file stores for ``codes``: None when they are a fresh fit's
    (:func:`sorted_codes` of ``classes``), else the map ordered by code."""
    codes = dict(codes)
    if codes == sorted_codes(classes):
        return None
    return dict(sorted(codes.items(), key=lambda item: item[1]))


def merged(
    maps: list[Mapping[str, int]], names: list[str], stored: list[bool]
) -> tuple[dict[str, int], list[str]]:
    """The code map of a merge of models with ``maps`` (their file ``names``) and what a
    user should be told: a class whose code differs between the models keeps the first
    one's; a class only a later model has keeps its code there if still free. Only a
    later model that ``stored`` its map (a map that is not sorted codes, so someone
    may rely on it) is told of: shards fitted apart have sorted codes of their own
    classes, which mean nothing to anyone.

    >>> codes, notes = merged([{"a": 10, "b": 11}, {"a": 10, "c": 11, "d": 12}], ["x", "y"],
    ...                       [False, True])
    >>> codes, notes
    ({'a': 10, 'b': 11, 'd': 12, 'c': 13}, ["class 'c' has exit code 11 in y but 13 in \
the merged model (x's codes win)"])
    """
    result = dict(maps[0])
    moved = []
    for codes, name, told in zip(maps[1:], names[1:], stored[1:]):
        taken = set(result.values())
        later = []
        for cls, code in sorted(codes.items(), key=lambda item: item[1]):
            if cls in result:
                if result[cls] != code:
                    moved.append((cls, code, name))
            elif code not in taken:
                result[cls] = code
                taken.add(code)
            else:
                later.append((cls, code))
        result = extended(result, [cls for cls, _ in later])
        moved += [(cls, code, name) for cls, code in later]
        if not told:
            moved = [entry for entry in moved if entry[2] != name]
    notes = [
        f"class {cls!r} has exit code {code} in {name} but "
        + (f"{result[cls]}" if cls in result else "none")
        + f" in the merged model ({names[0]}'s codes win)"
        for cls, code, name in moved
    ]
    return result, notes


def with_explicit(
    codes: Mapping[str, int], explicit: Mapping[str, int], where: str
) -> dict[str, int]:
    """``codes`` (a model's map, or empty for a new one) with the explicit map
    ``explicit`` added: a class that has a code already must be given the same one, and
    a new class a code no other class has. ``where`` names the model for messages.

    Raises
    ------
    UsageError
        For a code that would change or that another class holds.
    """
    result = dict(codes)
    holder = {code: cls for cls, code in result.items()}
    for cls, code in explicit.items():
        if cls in result:
            if result[cls] != code:
                raise UsageError(
                    f"--exit-code-map gives class {cls!r} exit code {code}, but it has "
                    f"{result[cls]} in {where}, and a class's code never changes: give "
                    f"{result[cls]}, or leave the class out of the map"
                )
            continue
        if code in holder:
            raise UsageError(
                f"--exit-code-map gives class {cls!r} exit code {code}, which class "
                f"{holder[code]!r} holds in {where}: choose a free code"
            )
        result[cls], holder[code] = code, cls
    return result


def parse_map(text: str, source: str) -> dict[str, int]:
    """The explicit map of ``--exit-code-map``: ``CLASS<TAB>CODE`` lines (what
    ``predict --exit-code-map`` prints; blank lines skipped) or ``CLASS=CODE,...``.

    >>> parse_map("billing=11,account=10", "the option")
    {'billing': 11, 'account': 10}
    >>> parse_map("account\\t10\\nbilling\\t11\\n", "codes.tsv")
    {'account': 10, 'billing': 11}

    Raises
    ------
    UsageError
        Naming the entry that is malformed, a code out of 10 to 124, or a class or code
        given twice.
    """
    lines = "\n" in text.strip() or "\t" in text
    entries = text.splitlines() if lines else text.split(",")
    codes: dict[str, int] = {}
    holder: dict[int, str] = {}
    for number, entry in enumerate(entries, start=1):
        if not entry.strip():
            continue
        cls, sep, value = entry.rpartition("\t" if "\t" in entry else "=")
        where = f"line {number} of {source}" if lines else f"{entry!r} in {source}"
        form = "CLASS<TAB>CODE per line" if lines else "CLASS=CODE,CLASS=CODE"
        value = value.strip()
        if not sep or not cls or not value.isascii() or not value.isdigit():
            raise UsageError(f"--exit-code-map: {where} is not a class and a code: write {form}")
        code = int(value)
        if code not in CODES:
            raise UsageError(
                f"--exit-code-map: {where} gives code {code}: exit codes for classes are "
                f"{FIRST_CODE} to {LAST_CODE} (0 to 9 are nbclass's own, from 125 the shell's)"
            )
        if cls in codes:
            raise UsageError(f"--exit-code-map: {where} gives class {cls!r} a second code")
        if code in holder:
            raise UsageError(
                f"--exit-code-map: {where} gives code {code} to {cls!r} and {holder[code]!r}"
            )
        codes[cls], holder[code] = code, cls
    if not codes:
        raise UsageError(f"--exit-code-map: {source} holds no class and code")
    return codes


def check_stored(data, classes: list[str]) -> dict[str, int] | None:
    """The ``exit_codes`` field of a model file's header, checked as untrusted input:
    None, or an object of distinct codes 10 to 124 that gives every class of ``classes``
    a code while one is free (as nbclass writes it).

    Raises
    ------
    ValueError
        Naming what is wrong.
    """
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError("the exit codes are not an object")
    for cls, code in data.items():
        if not cls or type(code) is not int or code not in CODES:
            raise ValueError(f"the exit code of class {cls!r} is not one of 10 to 124")
    if len(set(data.values())) != len(data):
        raise ValueError("two classes have the same exit code")
    if len(data) < len(CODES) and any(cls not in data for cls in classes):
        raise ValueError("a class has no exit code while codes are free")
    return dict(data)


def check_exit_classes(codes: Mapping[str, int], classes: Iterable[str]) -> None:
    """Refuse ``--exit-code`` for a model with a class that has no code."""
    missing = [cls for cls in classes if cls not in codes]
    if missing:
        raise UsageError(
            f"--exit-code can name at most {len(CODES)} classes (exit codes {FIRST_CODE} to "
            f"{LAST_CODE}) and class {missing[0]!r} of this model has none: read the label "
            "from standard output instead"
        )


def map_lines(codes: Mapping[str, int]) -> list[str]:
    """``CLASS<TAB>CODE`` per class, by code: what ``predict --exit-code-map`` prints and
    ``fit --exit-code-map`` reads."""
    return [f"{cls}\t{code}" for cls, code in sorted(codes.items(), key=lambda item: item[1])]
