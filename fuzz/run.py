"""Run one fuzz target under atheris (libFuzzer) for a bounded time.

    python fuzz/run.py TARGET SECONDS WORK_FOLDER

TARGET is a name in ``fuzz/targets.py``. WORK_FOLDER/TARGET holds the seeds (written by
``fuzz/seeds.py``) and grows with the inputs libFuzzer finds interesting; a crashing input
is written to WORK_FOLDER/crash-TARGET-* and the run stops with a non-zero status. Copy
it to tests/data/fuzz/TARGET/ to make it a regression test (tests/test_fuzz_targets.py).
"""

from __future__ import annotations

import os
import sys

import atheris

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

with atheris.instrument_imports(include=["nbclass"]):
    import targets


def main() -> None:
    name, seconds, work = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    target = targets.TARGETS[name]
    corpus = os.path.join(work, name)
    args = [
        sys.argv[0],
        f"-max_total_time={seconds}",
        "-timeout=10",  # one input taking 10 s is a hang
        "-rss_limit_mb=2048",
        "-max_len=65536",
        f"-artifact_prefix={os.path.join(work, 'crash-' + name + '-')}",
        "-print_final_stats=1",
        corpus,
    ]
    atheris.Setup(args, target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
