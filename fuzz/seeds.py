"""Write the seed inputs of the fuzz targets: valid models and labelled lines.

    python fuzz/seeds.py FOLDER

writes FOLDER/model_loader/* (a text model, one with a ledger, one with feature hashing,
a table model, all fitted on the demo corpora) and FOLDER/corpus_reader/* (labelled lines
in both formats, with CRLF, blank and unlabelled lines, and bytes that are not UTF-8).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from click.testing import CliRunner

from nbclass.cli import cli

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


if __name__ == "__main__":
    write_seeds(sys.argv[1])
