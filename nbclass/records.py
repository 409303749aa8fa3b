"""Records: dataclasses whose methods are written once, made dataclasses only when asked.

:func:`dataclasses.dataclass` (CPython 3.11) writes the source text of each method it adds
(``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, and for a frozen class
``__setattr__`` and ``__delattr__``) and compiles it when the class is defined: about half
a millisecond for a frozen class of nine fields, paid by every process that imports the
module. The one-document path of ``nbclass predict`` imports eight such classes; with
the import of :mod:`dataclasses` itself, that was a third of its start beyond the
interpreter's own.

A subclass of :class:`Record` is declared as a dataclass is (fields are the annotated
names, with a default, a :func:`field` or neither), and made, compared, hashed, printed
and frozen (``class X(Record, frozen=True)``) as ``@dataclass`` would make it, with the
methods of this module, compiled once into its cached bytecode. It is still a
dataclass: the first time anything asks for its dataclass attributes
(``dataclasses.fields``, ``replace``, ``asdict``, ``is_dataclass``), the class is given
them; until then :mod:`dataclasses` is not imported. Within the package, :func:`replace`
copies a record without that. The tests compare records with ``@dataclass`` on the same
declarations.

Only what the package's records use is supported: fields with a default, a
``default_factory`` or neither, ``repr=False``, ``compare=False``, ``__post_init__``;
anything else (``ClassVar`` or ``InitVar`` fields, fields inherited from another record,
a method the record would write) is refused when the class is defined.

Standard library only, and a leaf: every layer may use it.
"""

from __future__ import annotations

from _thread import RLock  # threading's own lock, without importing threading

_MISSING = object()  # no default given
_MAKING = RLock()  # held while a record class is made a dataclass
_DATACLASS_ATTRIBUTES = ("__dataclass_fields__", "__dataclass_params__", "__match_args__")
_WRITTEN = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")


class _Field:
    """What :func:`field` says of one field."""

    __slots__ = ("default", "default_factory", "repr", "compare")

    def __init__(self, default, default_factory, repr: bool, compare: bool):
        self.default, self.default_factory = default, default_factory
        self.repr, self.compare = repr, compare


def field(*, default=_MISSING, default_factory=_MISSING, repr: bool = True, compare: bool = True):
    """A record's field with these options, as :func:`dataclasses.field` takes them."""
    if default is not _MISSING and default_factory is not _MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, repr, compare)


class _Spec:
    """The fields of one record class, as the shared methods use them."""

    __slots__ = (
        "names", "fields", "defaults", "factories", "shown", "compared", "options", "post_init"
    )  # fmt: skip

    def __init__(self, cls: type):
        annotations = cls.__dict__.get("__annotations__", {})
        self.names, self.options = tuple(annotations), {}
        self.fields = frozenset(self.names)
        self.defaults, self.factories = {}, {}
        shown, compared, defaulted = [], [], None
        for name, annotation in annotations.items():
            kind = str(annotation).split("[")[0].rsplit(".", 1)[-1].strip()
            if kind in ("ClassVar", "InitVar"):
                raise TypeError(f"record {cls.__qualname__}: {kind} field {name!r}")
            value = cls.__dict__.get(name, _MISSING)
            options = value if isinstance(value, _Field) else _Field(value, _MISSING, True, True)
            self.options[name] = options
            if options.default is not _MISSING:
                if type(options.default).__hash__ is None:  # dataclass's rule: shared state
                    raise ValueError(
                        f"mutable default {type(options.default)} for field {name} is not "
                        "allowed: use default_factory"
                    )
                self.defaults[name] = options.default
            elif options.default_factory is not _MISSING:
                self.factories[name] = options.default_factory
            elif defaulted is not None:
                raise TypeError(f"non-default argument {name!r} follows default argument")
            if name in self.defaults or name in self.factories:
                defaulted = name
            if options.repr:
                shown.append(name)
            if options.compare:
                compared.append(name)
            if isinstance(value, _Field):  # the class attribute is the default, as in a dataclass
                if options.default is _MISSING:
                    delattr(cls, name)
                else:
                    setattr(cls, name, options.default)
        self.shown, self.compared = tuple(shown), tuple(compared)
        self.post_init = any("__post_init__" in vars(base) for base in cls.__mro__)


class _RecordType(type):
    """Gives a record class its dataclass attributes the first time they are asked for."""

    def __getattr__(cls, name: str):
        if name in _DATACLASS_ATTRIBUTES and "_record" in cls.__dict__:
            _make_dataclass(cls)
            return type.__getattribute__(cls, name)
        raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")


def _make_dataclass(cls: type) -> None:
    """Make ``cls`` a dataclass with its fields' options, keeping the record's methods
    (once, whichever thread asks first)."""
    with _MAKING:
        if "__dataclass_fields__" not in cls.__dict__:
            _add_dataclass_attributes(cls)


def _add_dataclass_attributes(cls: type) -> None:
    import dataclasses

    for name, options in cls._record.options.items():
        setattr(
            cls,
            name,
            dataclasses.field(
                default=dataclasses.MISSING if options.default is _MISSING else options.default,
                default_factory=(
                    dataclasses.MISSING
                    if options.default_factory is _MISSING
                    else options.default_factory
                ),
                repr=options.repr,
                compare=options.compare,
            ),
        )
    dataclasses.dataclass(init=False, repr=False, eq=False)(cls)


class Record(metaclass=_RecordType):
    """Base of the records: ``class Point(Record, frozen=True): x: int; y: int = 0``.

    >>> class Point(Record, frozen=True):
    ...     x: int
    ...     y: int = 0
    >>> Point(1), Point(1) == Point(1, 0), hash(Point(1)) == hash(Point(1, 0))
    (Point(x=1, y=0), True, True)
    >>> replace(Point(1), y=2)
    Point(x=1, y=2)
    """

    def __init_subclass__(cls, frozen: bool = False, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in _WRITTEN:
            if name in cls.__dict__:
                raise TypeError(f"record {cls.__qualname__} defines {name} itself")
        if any("_record" in vars(base) for base in cls.__mro__[1:]):
            raise TypeError(f"record {cls.__qualname__}: fields inherited from a record")
        cls._record = _Spec(cls)
        if not frozen:  # mutable and compared by value, as a dataclass: no hash
            cls.__setattr__, cls.__delattr__ = object.__setattr__, object.__delattr__
            cls.__hash__ = None

    def __init__(self, *args, **kwargs) -> None:
        # Into __dict__, not through __setattr__, which refuses in a frozen record.
        self.__dict__.update(_values(self, args, kwargs))
        if type(self)._record.post_init:
            self.__post_init__()

    def __getattr__(self, name: str):
        """Only for names an instance does not have: a dataclass attribute is its class's
        (``dataclasses.fields(record)``), anything else the usual error."""
        if name in _DATACLASS_ATTRIBUTES:
            return getattr(type(self), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self)._record.shown)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _compared(self) == _compared(other)

    def __hash__(self) -> int:
        return hash(_compared(self))

    def __setattr__(self, name: str, value) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        from dataclasses import FrozenInstanceError

        raise FrozenInstanceError(f"cannot delete field {name!r}")


def replace(record: Record, /, **changes) -> Record:
    """A copy of ``record`` with ``changes``, as :func:`dataclasses.replace` makes it (through
    ``__init__`` and ``__post_init__``), without making its class a dataclass."""
    values = {name: getattr(record, name) for name in type(record)._record.names}
    return type(record)(**{**values, **changes})


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


def _compared(self) -> tuple:
    return tuple(getattr(self, name) for name in type(self)._record.compared)
