"""The names a count's vocabulary is made of: KeyedRows.named_in, checked against the
definition (a word's row holds its name; a word pair's, its two words' joined by a
space), for words of any script, surrogates (a name decoded with surrogateescape)
included, in any order of the rows, across the blocks it names a time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import nbclass.counting.counts as counts_module
from nbclass.counting.counts import KeyedRows

NAMES = st.text(
    alphabet=st.sampled_from(list("ab_1Zé日本Σ😀") + ["\udcff", "\udc80", "\x01", "\u0300"]),
    min_size=1, max_size=9,
)  # fmt: skip


def keyed_rows(names: list[str], pairs: list[tuple[int, int]]) -> KeyedRows:
    """A KeyedRows holding ``names`` (distinct) as its first rows, keyed by their places
    (short keys: their order is the rows'), and then the word ``pairs`` of their rows."""
    keyed = KeyedRows()
    keys = np.arange(1, len(names) + 1, dtype=np.uint64)
    assert keyed.rows(names, keys).tolist() == list(range(len(names)))
    if pairs:
        first, second = (np.array(side, dtype=np.int64) for side in zip(*pairs))
        keyed.pair_rows(first, second)
    return keyed


def defined(names: list[str], pairs: list[tuple[int, int]]) -> list[str]:
    return names + [names[a] + " " + names[b] for a, b in pairs]


@given(
    st.lists(NAMES, min_size=1, max_size=12, unique=True).flatmap(
        lambda names: st.tuples(
            st.just(names),
            st.lists(st.tuples(*[st.integers(0, len(names) - 1)] * 2), max_size=20),
            st.randoms(use_true_random=False),
            st.integers(1, 5),
        )
    )
)
def test_named_in_gives_each_rows_name_in_the_order_asked(case):
    names, pairs, rng, block = case
    expected = defined(names, pairs)
    order = list(range(len(expected)))
    rng.shuffle(order)
    order = order[: rng.randint(0, len(order))]  # some rows, not all
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(counts_module, "_NAMED_BLOCK", block)  # places split across blocks
        keyed = keyed_rows(names, pairs)
        got = keyed.named_in(np.array(order, dtype=np.int64))
    assert got == tuple(expected[r] for r in order)
    assert all(type(name) is str for name in got)
    # The pairs of the rows as given (int32, as pair_rows keeps them) name the same.
    assert keyed.named_in(np.array(order, dtype=np.int32), keyed.pairs()) == got


def test_named_in_of_a_real_shape_names_every_pair_after_its_first_word():
    """Many words and pairs, in with_pairs' order (a word, then the pairs it begins), in
    blocks of the default size: the names, the pairs' spaces where their first word's
    end was, and the words' own names untouched."""
    rng = np.random.default_rng(7)
    letters = list("abcdeé日_")
    words = sorted({"".join(rng.choice(letters, rng.integers(1, 8))) for _ in range(3000)})
    pairs = sorted({(int(a), int(b)) for a, b in rng.integers(0, len(words), (70_000, 2))})
    keyed = keyed_rows(words, pairs)
    entries, _ = counts_module.with_pairs(np.arange(len(words)), keyed.pairs(), len(keyed.names))
    got = keyed.named_in(entries)
    expected = defined(words, pairs)
    assert len(got) == len(expected) > counts_module._NAMED_BLOCK
    assert got == tuple(expected[r] for r in entries.tolist())
    assert list(got) == sorted(got)  # the names' order, as the count relies on
