"""The one-document path (no numpy) gives what the batch path gives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import CHINESE_TEST

from nbclass.modelfile.quick import QuickModel, log_posterior
from nbclass.modelfile.textfile import save
from nbclass.models.estimators import DEFAULTS, EstimatorSettings
from nbclass.models.model import Classifier, VocabularyFilter, fit, select_features
from nbclass.reading.corpus import list_corpus

ESTIMATES = (  # (estimator, α, β) of every model
    ("posterior-mean", 1.0, (1.0, 1.0)),
    ("posterior-mean", 0.5, (0.25, 0.25)),
    ("map", 2.0, (2.0, 2.0)),
    ("map", 1.0, (1.0, 1.0)),
    ("mle", 1.0, (1.0, 1.0)),
)
SETTINGS = [
    EstimatorSettings(model=m, estimator=e, alpha=a, beta=b)
    for m in ("multinomial", "bernoulli")
    for e, a, b in ESTIMATES
] + [EstimatorSettings(model="bernoulli", estimator="posterior-mean", beta=(2.0, 3.0))]
SETTINGS += [
    EstimatorSettings(model="poisson", estimator=e, alpha=a, beta=b)
    for e, a, b in (
        *ESTIMATES,
        ("predictive", 1.0, (1.0, 1.0)),
        ("predictive", 1.0, (0.1, 0.1)),
    )
]


def assert_same(quick: list[float], batch: np.ndarray) -> None:
    """Equal to the last few bits: same infinities, finite values within 1e-12 relative."""
    batch = batch.tolist()
    assert [math.isinf(v) for v in quick] == [math.isinf(v) for v in batch]
    for q, b in zip(quick, batch):
        if math.isinf(b):
            assert q == b
        else:
            assert q == pytest.approx(b, rel=1e-12, abs=1e-12)


def both_paths(model, path, texts, settings):
    save(model, path)
    quick = QuickModel(path)
    batch = Classifier(model, settings)
    for text in texts:
        jll = batch.joint_log_likelihood([text])[0]
        assert_same(quick.joint_log_likelihood(text, settings), jll)
        assert_same(
            log_posterior(quick.joint_log_likelihood(text, settings)),
            batch.predict([text]).log_proba[0],
        )


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: f"{s.model}-{s.estimator}-{s.alpha}")
def test_chinese_corpus(chinese_corpus, tmp_path, settings):
    model = fit(list_corpus(str(chinese_corpus)))
    texts = [
        CHINESE_TEST,
        "",
        "unseen words only",
        "Chinese Macao",
        "Tokyo Japan Chinese",
        "Beijing",
    ]
    both_paths(model, str(tmp_path / "m.nbc"), texts, settings)


@pytest.mark.parametrize("settings", SETTINGS[:3] + SETTINGS[5:8] + SETTINGS[11:], ids=str)
def test_news_sample_with_a_vocabulary_filter(news_sample, tmp_path, settings):
    train, test = news_sample
    model = fit(
        list_corpus(str(train)), vocabulary_filter=VocabularyFilter(min_df=2, max_features=3000)
    )
    texts = [
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(test.rglob("*"))[:40]
        if p.is_file()
    ]
    both_paths(model, str(tmp_path / "m.nbc"), texts, settings)


def test_selected_model(news_sample, tmp_path):
    train, test = news_sample
    model = select_features(fit(list_corpus(str(train))), 200)
    texts = [
        p.read_text(encoding="utf-8", errors="replace")
        for p in sorted(test.rglob("*"))[:20]
        if p.is_file()
    ]
    both_paths(model, str(tmp_path / "m.nbc"), texts, EstimatorSettings())
    both_paths(model, str(tmp_path / "m.nbc"), texts, EstimatorSettings(model="bernoulli"))


@pytest.mark.parametrize(
    "defaults",
    [DEFAULTS, EstimatorSettings(), EstimatorSettings(model="poisson", estimator="predictive")],
    ids=["defaults", "plain", "poisson-predictive"],
)
def test_quick_path_does_not_import_numpy(tmp_path, chinese_corpus, defaults):
    """nbclass's defaults (fitted β, log tf) are served from the header's prepared numbers."""
    import subprocess
    import sys

    save(fit(list_corpus(str(chinese_corpus)), defaults=defaults), str(tmp_path / "m.nbc"))
    code = (
        "import sys, io\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b'Chinese Tokyo'))\n"
        "from nbclass.cli.app import main\n"
        "try:\n"
        f"    main(['predict', '-m', {str(tmp_path / 'm.nbc')!r}])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('numpy', 'scipy', 'joblib', 'rich') if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines()[-1] == "[]"
    assert result.stdout.splitlines()[0].startswith("-\tchina\t")
