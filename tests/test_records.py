"""nbclass.records: a record behaves as the dataclass of the same declaration.

Each declaration is made twice, once with ``@dataclass`` and once as a ``Record``, under
the same class name, and both are given the same arguments (hypothesis draws them): the
instances, their repr, equality, hash, ``replace``, ``asdict``, pickling and the errors
of a wrong call or an assignment must be the same.
"""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import FrozenInstanceError, dataclass, field
from typing import ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nbclass.models.abstain import Abstention
from nbclass.models.estimators import Calibration, EstimatorSettings, Prepared
from nbclass.reading.policy import ReadLog, ReadPolicy, Skip
from nbclass.records import Record, replace
from nbclass.records import field as record_field
from nbclass.text.tokenizer import TokenizerSettings


def declarations(frozen: bool, as_record: bool):
    """Classes declared as the package declares its records: dataclasses, or records."""
    base, field_of = (Record, record_field) if as_record else (object, field)
    options = {"frozen": frozen} if as_record else {}

    class Plain(base, **options):
        a: int
        b: str = "b"
        c: tuple = (1, 2)

    class Hidden(base, **options):
        items: list = field_of(default_factory=list)
        count: int = 0
        hook: object = field_of(default=None, repr=False, compare=False)

    class Checked(base, **options):
        """A record that checks its values."""

        low: int = 0
        high: int = 10

        def __post_init__(self):
            if self.low > self.high:
                raise ValueError(f"{self.low} > {self.high}")

    classes = {"Plain": Plain, "Hidden": Hidden, "Checked": Checked}
    if not as_record:
        classes = {name: dataclass(frozen=frozen)(cls) for name, cls in classes.items()}
    return classes


# Module-level classes, so that pickle finds them by name.
DATA_FROZEN = declarations(True, as_record=False)
RECORD_FROZEN = declarations(True, as_record=True)
DATA_MUTABLE = declarations(False, as_record=False)
RECORD_MUTABLE = declarations(False, as_record=True)
PAIRS = [(DATA_FROZEN[name], RECORD_FROZEN[name], True) for name in DATA_FROZEN] + [
    (DATA_MUTABLE[name], RECORD_MUTABLE[name], False) for name in DATA_MUTABLE
]
for _data, _record, _frozen in PAIRS:  # a name of its own, by which pickle finds it
    _record.__qualname__ = f"{_data.__name__}_{'frozen' if _frozen else 'mutable'}_record"
    globals()[_record.__qualname__] = _record

values = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.tuples(st.integers(0, 3)))


def outcome(cls, args, kwargs):
    """``("ok", instance)`` or ``("error", exception type)`` of ``cls(*args, **kwargs)``."""
    try:
        return "ok", cls(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        return "error", type(exc)


def hashed(obj):
    try:
        return hash(obj)
    except TypeError as exc:
        return str(exc)


def same_repr(data_obj, record_obj) -> bool:
    """The reprs agree but for the class name (the record's is its own, for pickle)."""
    name = type(record_obj).__qualname__
    return repr(record_obj).replace(name, type(data_obj).__name__, 1) == repr(data_obj).replace(
        type(data_obj).__qualname__, type(data_obj).__name__, 1
    )


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{p[0].__name__}-{p[2]}")
@given(
    args=st.lists(values, max_size=4),
    kwargs=st.dictionaries(
        st.sampled_from(["a", "b", "c", "low", "high", "z"]), values, max_size=3
    ),
    other=st.lists(values, max_size=3),
)
def test_a_record_is_its_dataclass(pair, args, kwargs, other):
    data_cls, record_cls, frozen = pair
    kind, made = outcome(record_cls, args, kwargs)
    expected_kind, expected = outcome(data_cls, args, kwargs)
    assert kind == expected_kind
    if kind == "error":
        assert made is expected
        return
    assert same_repr(expected, made)
    assert dataclasses.asdict(made) == dataclasses.asdict(expected)
    assert [f.name for f in dataclasses.fields(made)] == [
        f.name for f in dataclasses.fields(expected)
    ]
    assert dataclasses.is_dataclass(made)
    # Equality and hash with a second instance made from other arguments.
    other_kind, second = outcome(record_cls, other, {})
    _, expected_second = outcome(data_cls, other, {})
    if other_kind == "ok":
        assert (made == second) == (expected == expected_second)
    assert made == record_cls(*args, **kwargs)
    assert made != expected  # another class: never equal, as between two dataclasses
    assert hashed(made) == hashed(expected)  # the same hash, or the same error
    if frozen:
        name = dataclasses.fields(made)[0].name
        with pytest.raises(FrozenInstanceError):
            setattr(made, name, 1)
        with pytest.raises(FrozenInstanceError):
            delattr(made, name)
    else:
        assert type(made).__hash__ is None
    # replace() builds a new instance through __init__ (and __post_init__).
    first = dataclasses.fields(made)[0].name
    replaced = dataclasses.replace(made, **{first: getattr(made, first)})
    assert replaced == made
    assert pickle.loads(pickle.dumps(made)) == made


def test_a_mutable_record_takes_assignments():
    log = RECORD_MUTABLE["Hidden"]()
    log.count += 2
    log.items.append("x")
    assert (log.count, log.items, RECORD_MUTABLE["Hidden"]().items) == (2, ["x"], [])


def test_unsupported_declarations_are_refused():
    with pytest.raises(TypeError, match="ClassVar field 'n'"):

        class Counter(Record):
            n: ClassVar[int] = 0

    with pytest.raises(TypeError, match="defines __eq__ itself"):

        class OwnEq(Record):
            n: int = 0

            def __eq__(self, other):
                return True

    with pytest.raises(ValueError, match="mutable default <class 'list'> for field n"):

        class Shared(Record):
            n: list = []  # noqa: RUF012 - the declaration refused

    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        class Order(Record):
            a: int = 0
            b: int

    class Base(Record):
        a: int = 0

    with pytest.raises(TypeError, match="fields inherited from a record"):

        class Derived(Base):
            b: int = 0


def test_a_record_is_a_dataclass_only_once_asked():
    """A record's class gets its dataclass attributes when something asks for them, and
    replace() copies a record without asking; both copies are the same."""

    class Point(Record, frozen=True):
        x: int
        y: list = record_field(default_factory=list, compare=False)

    assert "__dataclass_fields__" not in vars(Point)
    point = Point(1, [2])
    copied = replace(point, x=3)
    assert "__dataclass_fields__" not in vars(Point)
    assert (copied.x, copied.y) == (3, [2])
    assert [f.name for f in dataclasses.fields(point)] == ["x", "y"]  # asked of an instance
    assert dataclasses.is_dataclass(Point) and "__dataclass_fields__" in vars(Point)
    with pytest.raises(AttributeError, match="'Point' object has no attribute 'z'"):
        point.z  # noqa: B018 - the lookup is the test
    assert dataclasses.replace(point, x=3) == copied
    assert [(f.name, f.compare) for f in dataclasses.fields(Point)] == [("x", True), ("y", False)]
    assert Point.__match_args__ == ("x", "y")
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        Point.nothing  # noqa: B018 - the lookup is the test


@pytest.mark.parametrize(
    "instance",
    [
        EstimatorSettings(model="complement", tf="log", prior_fit=True),
        Prepared(EstimatorSettings(), beta=0.5, class_totals=(1.0, 2.0)),
        Calibration(0.5, -0.25, 0.125),
        Abstention(min_probability=0.5, label="?"),
        ReadPolicy(encoding="latin-1", on_error="skip"),
        Skip("a.txt", "binary"),
        ReadLog(replaced=3),
        TokenizerSettings(stop_words=("the",), ngram_range=(1, 2)),
    ],
    ids=type,
)
def test_the_package_records_repr_and_replace_as_dataclasses(instance):
    """The records of the one-document path print and copy as their dataclasses did."""
    fields = dataclasses.fields(instance)
    shown = ", ".join(f"{f.name}={getattr(instance, f.name)!r}" for f in fields if f.repr)
    assert repr(instance) == f"{type(instance).__qualname__}({shown})"
    assert dataclasses.replace(instance) == instance
    assert pickle.loads(pickle.dumps(instance)) == instance


def test_threads_asking_at_once_make_one_dataclass():
    """Eight threads ask a new record class for its fields at the same moment: each gets
    the same fields, the default factory kept (made twice, it would be lost)."""
    import threading

    class Log(Record):
        items: list = record_field(default_factory=list)
        count: int = 0

    barrier, found = threading.Barrier(8), []

    def ask():
        barrier.wait()
        found.append([(f.name, f.default_factory) for f in dataclasses.fields(Log)])

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [[("items", list), ("count", dataclasses.MISSING)]] * 8
    assert Log().items == [] and dataclasses.replace(Log(count=2)).count == 2
