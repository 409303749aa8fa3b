"""Dataclasses whose methods are written once, not compiled for each class at import.

:func:`dataclasses.dataclass` (CPython 3.11) writes the source text of each method it adds
(``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, and for a frozen class
``__setattr__`` and ``__delattr__``) and compiles it when the class is defined: about half
a millisecond for a frozen class of nine fields, paid by every process that imports the
module, whether or not it makes one instance. The one-document path of ``nbclass
predict`` imports eight such classes, a third of its whole start beyond the interpreter's
own.

:func:`record` makes the same class with the methods of this module, which are compiled
once into its cached bytecode: it is still a dataclass (``dataclasses.fields``,
``replace``, ``asdict`` and ``is_dataclass`` work on it), and its instances are made,
compared, hashed, printed and frozen as ``@dataclass`` would (the tests compare the two
on the same declarations). Only what the package's records use is supported: fields
with a default or a ``default_factory`` or neither, ``repr=False`` and ``compare=False``,
``__post_init__``; anything else (``init=False`` fields, ``InitVar``, keyword-only
fields, ordering) is refused when the class is defined.

Standard library only, and a leaf: every layer may use it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import MISSING, FrozenInstanceError


class _Spec:
    """What the shared methods need to know about one record class."""

    __slots__ = ("names", "fields", "defaults", "factories", "shown", "compared", "post_init")

    def __init__(self, cls: type):
        fields = dataclasses.fields(cls)
        for f in fields:
            if not f.init or f.kw_only:
                raise TypeError(f"record {cls.__qualname__}: field {f.name!r} is not supported")
        self.names = tuple(f.name for f in fields)
        self.fields = frozenset(self.names)
        self.defaults = {f.name: f.default for f in fields if f.default is not MISSING}
        self.factories = {
            f.name: f.default_factory for f in fields if f.default_factory is not MISSING
        }
        self.shown = tuple(f.name for f in fields if f.repr)
        self.compared = tuple(f.name for f in fields if f.compare)
        self.post_init = getattr(cls, "__post_init__", None)


def record(cls: type | None = None, *, frozen: bool = False):
    """``@dataclass`` or ``@dataclass(frozen=True)``, with shared methods (see above).

    >>> @record(frozen=True)
    ... class Point:
    ...     x: int
    ...     y: int = 0
    >>> Point(1), Point(1) == Point(1, 0), hash(Point(1)) == hash(Point(1, 0))
    (Point(x=1, y=0), True, True)
    >>> dataclasses.replace(Point(1), y=2)
    Point(x=1, y=2)
    """

    def wrap(cls: type) -> type:
        for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__"):
            if name in cls.__dict__:
                raise TypeError(f"record {cls.__qualname__} defines {name} itself")
        cls = dataclasses.dataclass(init=False, repr=False, eq=False)(cls)
        cls._record = _Spec(cls)
        cls.__init__ = _init
        cls.__repr__ = _repr
        cls.__eq__ = _eq
        if frozen:
            cls.__hash__ = _hash
            cls.__setattr__ = _refuse_set
            cls.__delattr__ = _refuse_delete
        else:
            cls.__hash__ = None  # mutable and compared by value, as a dataclass
        return cls

    return wrap if cls is None else wrap(cls)


def _values(self, args: tuple, kwargs: dict) -> dict:
    """The field values of a new instance, bound as a dataclass's ``__init__`` binds them."""
    spec = type(self)._record
    names = spec.names
    if len(args) > len(names):
        raise TypeError(
            f"{type(self).__qualname__}() takes {len(names)} arguments, {len(args)} given"
        )
    values = dict(zip(names, args))
    for name, value in kwargs.items():
        if name not in spec.fields:
            raise TypeError(f"{type(self).__qualname__}() got an unexpected argument {name!r}")
        if name in values:
            raise TypeError(f"{type(self).__qualname__}() got multiple values for {name!r}")
        values[name] = value
    if len(values) < len(names):
        for name in names:
            if name in values:
                continue
            if name in spec.defaults:
                values[name] = spec.defaults[name]
            elif name in spec.factories:
                values[name] = spec.factories[name]()
            else:
                raise TypeError(f"{type(self).__qualname__}() missing argument {name!r}")
    return values


def _init(self, *args, **kwargs) -> None:
    # Into __dict__, not through __setattr__, which refuses in a frozen record.
    self.__dict__.update(_values(self, args, kwargs))
    post_init = type(self)._record.post_init
    if post_init is not None:
        post_init(self)


def _repr(self) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self)._record.shown)
    return f"{type(self).__qualname__}({shown})"


def _compared(self) -> tuple:
    return tuple(getattr(self, name) for name in type(self)._record.compared)


def _eq(self, other):
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _compared(self) == _compared(other)


def _hash(self) -> int:
    return hash(_compared(self))


def _refuse_set(self, name: str, value) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _refuse_delete(self, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")
