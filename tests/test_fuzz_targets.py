"""The fuzz targets of ``make fuzz`` (fuzz/targets.py), run here without atheris.

On the seeds ``make fuzz`` starts from, on every input that ever made a target fail
(tests/data/fuzz/TARGET/, the regression tests), and on inputs hypothesis derives from the
seeds (bytes changed, cut or appended, then the checksums repaired as the model target
does). Each target raises nothing but the errors nbclass reports to users.
"""

from __future__ import annotations

import json
import sys

import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(REPO / "fuzz"))
import seeds  # noqa: E402
import targets  # noqa: E402

from nbclass.modelfile.fileformat import pack  # noqa: E402

REGRESSIONS = REPO / "tests" / "data" / "fuzz"


@pytest.fixture(scope="module")
def seed_files(tmp_path_factory) -> dict[str, list[bytes]]:
    folder = tmp_path_factory.mktemp("seeds")
    seeds.write_seeds(str(folder))
    return {
        name: [path.read_bytes() for path in sorted((folder / name).iterdir())]
        for name in targets.TARGETS
    }


def test_the_seeds_are_valid_inputs(seed_files):
    from nbclass.modelfile import tablefile
    from nbclass.modelfile import textfile as modelfile

    models = seed_files["model_loader"]
    assert len(models) == 4
    for data in models:
        loads = tablefile.loads if b'"kind": "table"' in data else modelfile.loads
        loads(data)
    assert len(seed_files["corpus_reader"]) == 4


@pytest.mark.parametrize("name", list(targets.TARGETS))
def test_every_seed_passes(seed_files, name):
    for data in seed_files[name]:
        targets.TARGETS[name](data)


REGRESSION_FILES = sorted(p for p in REGRESSIONS.glob("*/*") if p.is_file())


@pytest.mark.parametrize(
    "path", REGRESSION_FILES, ids=[f"{p.parent.name}/{p.name}" for p in REGRESSION_FILES]
)
def test_inputs_found_by_fuzzing_pass(path):
    targets.TARGETS[path.parent.name](path.read_bytes())


def test_there_are_regression_inputs():
    assert {p.parent.name for p in REGRESSION_FILES} <= set(targets.TARGETS)
    assert len(REGRESSION_FILES) >= 1


def test_repaired_gets_a_mutation_past_the_checksums(seed_files):
    """The model target's repair makes a mutated section reach the deeper checks."""
    import json

    from nbclass.errors import ModelFileError
    from nbclass.modelfile.fileformat import PREFIX
    from nbclass.modelfile.textfile import loads

    data = seed_files["model_loader"][0]
    assert targets.repaired(data) == data  # already right: unchanged
    header = json.loads(data[PREFIX.size : PREFIX.size + PREFIX.unpack_from(data)[2]])
    doc_count = next(e for e in header["sections"] if e["name"] == "doc_count")
    damaged = bytearray(data)
    damaged[header["sections_start"] + doc_count["offset"]] = 250  # D_jc = 250 > N_c
    with pytest.raises(ModelFileError, match="is corrupted \\(section 'doc_count' checksum"):
        loads(bytes(damaged))
    with pytest.raises(ModelFileError, match="more documents of a class than the class has"):
        loads(targets.repaired(bytes(damaged)))
    assert targets.repaired(b"not a model") is None


@settings(max_examples=150, deadline=None, database=None)
@given(data=st.data())
def test_model_loader_on_mutated_seeds(seed_files, data):
    seed = data.draw(st.sampled_from(seed_files["model_loader"]))
    mutation = bytearray(seed)
    for _ in range(data.draw(st.integers(1, 3))):
        position = data.draw(st.integers(0, len(mutation) - 1))
        mutation[position] = data.draw(st.integers(0, 255))
    targets.model_loader(bytes(mutation))


@settings(max_examples=150, deadline=None, database=None)
@given(data=st.binary(max_size=400) | st.text(max_size=200).map(str.encode))
def test_corpus_reader_on_random_bytes(data):
    targets.corpus_reader(data)


def test_the_forged_header_seeds_are_refused_by_both_loaders(seed_files, tmp_path):
    """The model_header seeds that forge a field reach the checks, and fail them."""
    from nbclass.errors import ModelFileError
    from nbclass.modelfile import textfile as modelfile
    from nbclass.modelfile.quick import QuickModel

    header, table = targets._base_model()
    for data in seed_files["model_header"]:
        edit = json.loads(data)
        forged = json.loads(json.dumps(header))
        for key, value in edit.items():
            if isinstance(value, dict) and isinstance(forged.get(key), dict):
                forged[key].update(value)
            else:
                forged[key] = value
        path = tmp_path / "forged.nbc"
        path.write_bytes(pack(forged, table))
        if "nbclass_version" in edit:  # the harmless edit: both load it
            modelfile.load(str(path))
            QuickModel(str(path))
            continue
        for loader in (modelfile.load, QuickModel):
            with pytest.raises(ModelFileError, match="is not a valid nbclass model"):
                loader(str(path))


SCALARS = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False) | st.text(max_size=12)
)  # fmt: skip
PATTERN_PIECES = st.sampled_from(
    ["\\w", "\\w+", "(", ")", "+", "*", "?", "|", "a", "(?:", "\\1", "{2,}", "[a-z]", "\\b"]
)
HEADER_EDITS = st.fixed_dictionaries(
    {},
    optional={
        "classes": st.lists(st.sampled_from(["account", "billing", "outage", ""]), max_size=4),
        "tokenizer": st.fixed_dictionaries(
            {},
            optional={
                "token_pattern": st.lists(PATTERN_PIECES, max_size=8).map("".join),
                "ngram_range": st.lists(st.integers(-2, 2**40), min_size=2, max_size=2),
                "lowercase": SCALARS,
            },
        ),
        "prepared": st.fixed_dictionaries(
            {},
            optional={
                "beta": SCALARS,
                "class_totals": st.none() | st.lists(st.floats(0, 1e6), max_size=4),
                "weight_norms": st.none() | st.lists(st.floats(0, 1e6), max_size=4),
            },
        ),
        "defaults": st.fixed_dictionaries({}, optional={"alpha": SCALARS, "tf": SCALARS}),
        "n_used": SCALARS,
    },
)


@settings(max_examples=120, deadline=None, database=None)
@given(edit=HEADER_EDITS)
def test_model_header_on_forged_fields(edit):
    targets.model_header(json.dumps(edit).encode())


@settings(max_examples=150, deadline=None, database=None)
@given(data=st.binary(max_size=400) | st.text(max_size=200).map(str.encode))
def test_table_reader_on_random_bytes(data):
    targets.table_reader(data)
