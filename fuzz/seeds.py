"""Write the seed inputs of the fuzz targets: valid models and labelled lines.

    python fuzz/seeds.py FOLDER

writes FOLDER/model_loader/* (a text model, one with a ledger, one with feature hashing,
a table model, all fitted on the demo corpora), FOLDER/corpus_reader/* (labelled lines
in both formats, with CRLF, blank and unlabelled lines, and bytes that are not UTF-8),
FOLDER/model_header/* (edits of a model's header, forged and harmless) and
FOLDER/table_reader/* (small tables in the three formats).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from click.testing import CliRunner

from nbclass.cli.app import cli

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "corpora" / "demo"
MODELS = {
    "text.nbc": ["fit", str(DEMO)],
    "ledger.nbc": ["fit", str(DEMO), "--ledger", "--ngram-range", "1,2"],
    "hashed.nbc": ["fit", str(DEMO), "--hash-features", "64", "--model", "bernoulli"],
    "table.nbc": ["fit", "--table", str(REPO / "corpora" / "table-demo.csv"), "--label", "team",
                  "--column-types", "ticket=ignore"],
}  # fmt: skip
LINES = {
    "tab.tsv": b"billing\tmy invoice is wrong\noutage\tthe api is down\n",
    "fasttext.txt": b"__label__billing refund please\r\n__label__outage 503 errors\r\n",
    "mixed.tsv": b"billing\tcaf\xc3\xa9 cr\xe8me\n\n   \nno label here\naccount\t\x00reset\n",
    "one-class.tsv": b"billing\ta\nbilling\tb",
}

# Edits of a valid model's header (fuzz/targets.py model_header): forged fields that must
# be refused, and harmless ones.
HEADERS = {
    "pattern.json": b'{"tokenizer": {"token_pattern": "(?u)(\\\\w+)+!"}}',
    "ngrams.json": b'{"tokenizer": {"ngram_range": [1, 100000000]}}',
    "beta.json": b'{"prepared": {"beta": 1e-300}}',
    "classes.json": b'{"classes": ["account", "account", "outage"]}',
    "alpha-true.json": b'{"defaults": {"alpha": true}}',
    "calibration-text.json": b'{"calibration": {"t0": "0.5"}}',
    "same.json": b'{"nbclass_version": "0.0"}',
}
TABLES = {
    "table.csv": b'id,text,team\r\n1,"refund, please",billing\r\n2,"two\nlines",tech\r\n',
    "table.tsv": b"\xef\xbb\xbfid\ttext\tteam\n1\tcaf\xc3\xa9\tbilling\n2\t\x00\tNA\n",
    "table.jsonl": b'{"id": 1, "text": "refund"}\n\n{"id": 2.5, "team": null}\r{"x": true}\n',
}


def write_seeds(folder: str) -> None:
    models, lines = Path(folder) / "model_loader", Path(folder) / "corpus_reader"
    models.mkdir(parents=True, exist_ok=True)
    lines.mkdir(parents=True, exist_ok=True)
    for name, args in MODELS.items():
        result = CliRunner().invoke(cli, [*args, "-o", str(models / name), "-q"])
        if result.exit_code != 0:
            raise SystemExit(f"cannot fit seed {name}: {result.output}")
        lock = models / f".{name}.lock"
        if lock.exists():
            os.unlink(lock)
    for name, data in LINES.items():
        (lines / name).write_bytes(data)
    for target, seeds in (("model_header", HEADERS), ("table_reader", TABLES)):
        (Path(folder) / target).mkdir(parents=True, exist_ok=True)
        for name, data in seeds.items():
            (Path(folder) / target / name).write_bytes(data)


if __name__ == "__main__":
    write_seeds(sys.argv[1])
