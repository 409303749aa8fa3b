"""The one-document fast start and click's predict cannot drift apart: both read the same
table of options (nbclass.cli.predict_options), and these tests hold them to it."""

from __future__ import annotations

import click
import pytest

from nbclass.cli import predict_options as spec
from nbclass.cli.app import cli
from nbclass.cli.entry import parse_predict
from nbclass.cli.options import Ranged
from nbclass.ranges import RANGES

PREDICT = cli.commands["predict"]
CLICK = {
    opt: param
    for param in PREDICT.params
    if isinstance(param, click.Option)
    for opt in (*param.opts, *param.secondary_opts)
}


def _names(option: spec.Option) -> list[str]:
    return [name for spelling in option.names for name in spelling.split("/")]


def _click_params(argv: list[str]) -> dict:
    """The parameters click's predict gives ``argv`` (parsed, not run)."""
    with PREDICT.make_context("predict", list(argv), resilient_parsing=False) as ctx:
        return dict(ctx.params)


def test_every_predict_option_is_fast_or_handed_to_click_and_nothing_else():
    fast = {name for option in spec.FAST for name in _names(option)}
    assert fast.isdisjoint(spec.FALLBACK)
    assert fast | set(spec.FALLBACK) == set(CLICK)


@pytest.mark.parametrize("option", spec.FAST, ids=repr)
def test_each_fast_option_is_the_click_option_of_the_same_name_default_and_kind(option):
    params = {CLICK[name] for name in _names(option)}
    assert len(params) == 1
    param = params.pop()
    assert param.name == option.key
    given = ["-m", "m.nbc"] if option is not spec.MODEL_FILE else []
    if given:  # the value click gives when the option is left out
        assert _click_params(given)[option.key] == option.default
    else:
        assert param.required
    assert param.metavar == option.metavar
    kind = option.kind
    if kind in ("flag", "switch"):
        assert param.is_flag and (kind == "switch") == bool(param.secondary_opts)
    elif kind == "multiple":
        assert param.multiple and param.type is click.STRING
    elif kind == "int":  # a whole number >= 1, in the option's range
        assert isinstance(param.type, Ranged) and param.type.range is RANGES[param.opts[0]]
        assert param.type.range.low == 1
    elif kind == "float":  # checked by the library, or by click in the option's range
        assert param.type is click.FLOAT or param.type.range is RANGES[param.opts[0]]
    elif kind == "path":
        assert isinstance(param.type, click.Path)
    elif kind == "str":
        assert param.type is click.STRING
    else:
        assert tuple(param.type.choices) == kind


def test_with_no_option_both_read_the_same_defaults():
    fast = parse_predict(["-m", "m.nbc"])
    slow = _click_params(["-m", "m.nbc"])
    assert {key: fast[key] for key in slow if key in fast} == {
        option.key: slow[option.key] for option in spec.FAST
    }
    assert set(fast) == {option.key for option in spec.FAST} | {"path"}


# One value of every kind, for every fast option: each parser must read it alike.
VALUES = {"int": "3", "float": "0.25", "str": "maybe", "path": "other.nbc", "multiple": "40%"}


@pytest.mark.parametrize("option", spec.FAST, ids=repr)
def test_every_spelling_of_every_fast_option_reads_as_click_reads_it(option):
    spellings = []
    for name in _names(option):
        if option.kind in ("flag", "switch"):
            spellings.append([name])
        else:
            value = option.kind[-1] if isinstance(option.kind, tuple) else VALUES[option.kind]
            spellings += [[name, value], [f"{name}={value}"]] if name.startswith("--") else [
                [name, value]
            ]
    for given in spellings:
        argv = ["-m", "m.nbc", *given] if option is not spec.MODEL_FILE else given
        fast = parse_predict([*argv, "doc.txt"])
        assert fast is not None, given
        slow = _click_params([*argv, "doc.txt"])
        assert fast[option.key] == slow[option.key], given
        assert fast["path"] == "doc.txt" and slow["paths"] == ("doc.txt",)


@pytest.mark.parametrize("name", spec.FALLBACK)
def test_every_fallback_option_sends_the_fast_start_to_click(name):
    param = CLICK[name]
    argv = ["-m", "m.nbc", name] + ([] if param.is_flag else ["1"])
    assert parse_predict(argv) is None
