"""One document without numpy: its posterior read straight from the model file.

``nbclass predict`` with a single document (a cron job piping one ticket in) spends most
of its time starting up: importing numpy and scipy takes far longer than scoring a few
hundred words. This module scores one document with the standard library alone. It reads
the model file through :mod:`nbclass.modelfile.fileformat` (every checksum and size checked), finds
the document's words by binary search in the sorted vocabulary, reads only their rows of
counts, and takes the per-class totals it needs from the file's derived sections (T_c
and the histograms of D_jc over the used words).

The formulas are the shared ones of :mod:`nbclass.models.estimators`, evaluated in the same
order as the batch path (:mod:`nbclass.models.posterior`): a word's weight is
log θ_jc (multinomial) or log θ_jc − log(1 − θ_jc) (Bernoulli), summed over the
document's words in vocabulary order and added to the same per-class constant. The
results agree with the batch path to the last few bits (numpy's and the C library's
logarithms may round differently); the tests compare them.
"""

from __future__ import annotations

import math

try:  # the C functions bisect.py takes them from: one module fewer to import
    from _bisect import bisect_left, bisect_right
except ImportError:  # pragma: no cover - not CPython
    from bisect import bisect_left, bisect_right

from ..errors import ModelFileError
from ..models.estimators import (
    EstimatorSettings,
    bernoulli_absent_total,
    bernoulli_fraction,
    class_prior_fraction,
    log_ratio,
    multinomial_fraction,
    no_evidence_posterior,
    score_gap,
)
from ..models.exitcodes import effective
from ..models.layout import dense_cells
from ..text.tokenizer import token_groups
from . import header as checked
from .fileformat import MODEL_SECTIONS, OPTIONAL_SECTIONS, parse, problem_of, read, refuse

_BLOCK = 512  # words of the vocabulary per block of the word search (QuickModel._document)


class QuickModel:
    """A model file opened for scoring single documents.

    Attributes
    ----------
    classes : list of str
    defaults : EstimatorSettings
    calibration : Calibration or None
    exit_codes : dict
        The exit code of each class (:mod:`nbclass.models.exitcodes`).
    """

    def __init__(self, path: str, data: bytes | None = None):
        """``data``: the file's bytes, when read already (the service reads them once for
        this reader and the full loader, so both see the same file); else read here."""
        self.path = path
        self._last = None  # (text, rows, tokens) of the last document scored
        self._firsts = (_BLOCK, None)  # every _BLOCK-th word, once a document needs them
        # Every CRC is checked (a flipped bit anywhere is refused, ledger included); only
        # the sections used are looked at.
        if data is None:
            data = read(path, mapped=True)
        header, sections = parse(data, path, MODEL_SECTIONS, OPTIONAL_SECTIONS)
        # The bytes as read and parsed, for a command that loads the whole model next
        # (bulk predict: the full loader takes them, not a second read and check).
        self.data, self.parsed = data, (header, sections)
        limit = checked.memory_limit(len(data))
        try:
            # Field by field, as the full loader reads them (nbclass.modelfile.header).
            self.classes = checked.classes(header)
            self.tokenizer, self.tokenize = checked.tokenizer(header)
            self.defaults = checked.defaults(header)
            self.n_used = checked.whole(header["n_used"], "n_used")
            V, C = checked.whole(header["n_features"], "n_features"), len(self.classes)
            nnz = len(sections["class_index"])
            checked.memory(path, V, C, nnz, len(data), limit)  # as the full loader
            # The records the full loader checks, checked alike (the numbers are not used here).
            checked.vocabulary_filter(header)
            checked.selection(header)
            checked.choice(header)
            checked.sample(header)
            # A multi-label model is scored label by label on the batch path.
            self.multi_label = checked.multi_label(header, self.classes)
            s = sections
            # A view, not a copy: the few words the search compares are copied one by one.
            self.blob, self.offsets = s["vocabulary"], s["vocabulary_offsets"]
            self.class_count = s["class_count"].tolist()
            self.class_tokens = s["class_tokens"].tolist()
            self.word_ptr, self.class_index = s["word_ptr"], s["class_index"]
            self.doc_count, self.token_count = s["doc_count"], s["token_count"]
            self.used = s["used"]
            self.prepared = checked.prepared(header, C, self.defaults)
            self.calibration = checked.calibration(header, C)
            self.exit_codes = effective(checked.exit_codes(header, self.classes), self.classes)
            self.typicality = header.get("typicality")
            hist_ptr = s["histogram_ptr"].tolist()
            self._histogram_sections = (hist_ptr, s["histogram_value"], s["histogram_count"])
            if (
                len(self.offsets) != V + 1
                or len(self.word_ptr) != V + 1
                or len(self.class_count) != C
                or len(self.class_tokens) != C
                or len(hist_ptr) != C + 1
                or len(self.used) != (V + 7) // 8
                or not _sizes_agree(s, header, V, C)
            ):
                raise ValueError("inconsistent section sizes")
            if self.prepared is not None:
                total = checked.transformed_total(self.prepared)
                checked.check_beta(self.prepared, sum(self.class_tokens), total)
        except ModelFileError:
            raise
        except Exception as exc:  # any malformed field: the same answer as the full loader
            raise refuse(path, f"is not a valid nbclass model ({problem_of(exc)})") from None
        if self.typicality is not None:  # kept only while it describes these counts
            from ..models.novelty import quick_fingerprint, record_applies

            counted = quick_fingerprint(self.class_count, self.class_tokens, self.n_used)
            if not record_applies(self.typicality, self.defaults, counted):
                self.typicality = None

    def histogram(self, c: int) -> list[tuple[int, int]]:
        """Class c's pairs (d, n): n used words have D_jc = d (Bernoulli scoring needs them)."""
        ptr, values, counts = self._histogram_sections
        return list(zip(values[ptr[c] : ptr[c + 1]], counts[ptr[c] : ptr[c + 1]]))

    def _rows(self, text: str) -> list[tuple[int, int]]:
        """(j, x_j) for the used vocabulary words of ``text``, j ascending."""
        return self._document(text)[0]

    def _document(self, text: str) -> tuple[list[tuple[int, int]], int]:
        """``(rows, tokens)``: (j, x_j) for the used vocabulary words of ``text``, j
        ascending, and the number of its tokens; found once for the last text asked.

        The vocabulary is sorted by code point, which is the order of its UTF-8 bytes, so a
        binary search over the encoded words finds each token without decoding them all.
        The search takes two steps: in the list of every ``_BLOCK``-th word (compared at C
        speed) for the token's block, then in that block, each step of which slices a word
        out of the vocabulary.
        """
        last = self._last
        if last is not None and last[0] is text:
            return last[1], last[2]
        tokens = self.tokenize(text)
        blob, offsets, used, found = self.blob, self.offsets, self.used, {}
        V = len(offsets) - 1

        def word_at(j: int) -> bytes:
            return bytes(blob[offsets[j] : offsets[j + 1] - 1])

        block, firsts = self._firsts  # kept for the next document (a service scores many)
        if len(tokens) and (firsts is None or block != _BLOCK):
            firsts = [word_at(j) for j in range(0, V, _BLOCK)]
            self._firsts = (_BLOCK, firsts)
        every = range(V)
        # The distinct tokens of a part of a long document's n-grams at a time (all of
        # them for a list): its n-grams of every length are never all held at once.
        for counts in token_groups(tokens):
            for token, n in counts.items():
                key = token.encode("utf-8")
                start = (bisect_right(firsts, key) - 1) * _BLOCK
                if start < 0:  # before the first word
                    continue
                j = bisect_left(every, key, start, min(start + _BLOCK, V), key=word_at)
                if j < V and word_at(j) == key and used[j >> 3] >> (j & 7) & 1:
                    found[j] = found.get(j, 0) + n
        rows = sorted(found.items())
        self._last = (text, rows, len(tokens))
        return rows, len(tokens)

    def known_tokens(self, text: str) -> tuple[int, int]:
        """(known tokens, all tokens) of ``text``; known tokens are used vocabulary words."""
        rows, tokens = self._document(text)
        return sum(x for _, x in rows), tokens

    def _entries(self, j: int) -> dict[int, tuple[int, int]]:
        """{c: (D_jc, T_jc)} for the classes where word j occurs."""
        start, end = self.word_ptr[j], self.word_ptr[j + 1]
        pairs = zip(self.doc_count[start:end], self.token_count[start:end])
        return dict(zip(self.class_index[start:end], pairs))

    def can_score(self, settings: EstimatorSettings) -> bool:
        """Whether these settings need only the document's words and per-class numbers.

        A fitted β, transformed class totals and normalised weights depend on every count:
        the file's header keeps them for the model's default settings
        (:class:`nbclass.models.textmodels.Prepared`), so those settings can be scored here, as
        can every setting that needs none of them. DCM's concentrations are not kept: the
        command line scores it, and any other setting, on the batch path instead, with the
        same result.
        """
        if settings.model == "dcm":
            return False
        if settings.prior_fit or (
            settings.model in ("multinomial", "complement") and settings.transformed
        ):
            return self.prepared is not None and self.prepared.settings == settings
        return True

    def joint_log_likelihood(self, text: str, settings: EstimatorSettings) -> list[float]:
        """b_c = log π_c + log p(x | c) for each class."""
        try:
            return self._joint_log_likelihood(text, settings)
        except (IndexError, ValueError, KeyError, ArithmeticError) as exc:
            raise refuse(self.path, f"is not a valid nbclass model ({problem_of(exc)})") from None

    def _joint_log_likelihood(self, text: str, s: EstimatorSettings) -> list[float]:
        prepared = self.prepared
        if prepared is not None and prepared.settings == s:
            s = prepared.resolved()
        else:
            prepared = None
        C, N_c = len(self.classes), self.class_count
        N = sum(N_c)
        log_pi = [log_ratio(*class_prior_fraction(n, N, C, s.estimator, s.alpha)) for n in N_c]
        if not s.class_prior:
            log_pi = [0.0] * C
        rows = self._rows(text)
        scores = [0.0] * C
        if s.model in ("multinomial", "complement") and s.transformed:
            return self._transformed(rows, s, prepared, log_pi)
        if s.model == "poisson":
            return self._poisson(rows, s, log_pi)
        if s.model == "complement":
            return [b + p for b, p in zip(self._complement(rows, s.beta[0]), log_pi)]
        if s.model == "multinomial" and s.estimator == "predictive":
            return self._polya(rows, s.beta[0], log_pi)
        if s.model == "multinomial":
            V, T_c, beta, estimator = self.n_used, self.class_tokens, s.beta[0], s.estimator
            # log θ_jc of a word absent from class c (T_jc = 0), the same for every such word.
            absent = [
                log_ratio(*multinomial_fraction(0, T_c[c], V, estimator, beta)) for c in range(C)
            ]
            if not dense_cells(V, C):  # as the batch path: from the pairs alone
                return self._from_pairs(rows, absent, log_pi, lambda c, pair: log_ratio(
                    *multinomial_fraction(pair[1], T_c[c], V, estimator, beta)
                ))  # fmt: skip
            for j, x in rows:
                weights = absent[:]
                for c, (_, T_jc) in self._entries(j).items():
                    weights[c] = log_ratio(*multinomial_fraction(T_jc, T_c[c], V, estimator, beta))
                scores = [score + x * w for score, w in zip(scores, weights)]
            return [score + log_pi[c] for c, score in enumerate(scores)]
        bias, required = [], []
        for c in range(C):
            total, certain = bernoulli_absent_total(self.histogram(c), N_c[c], s.estimator, s.beta)
            bias.append(log_pi[c] + total)
            required.append(certain)

        def weight(D_jc: int, c: int) -> tuple[float, int]:
            """log θ_jc − log(1 − θ_jc) of a present word, and 1 where θ_jc = 1."""
            present, absent, denominator = bernoulli_fraction(D_jc, N_c[c], s.estimator, s.beta)
            if denominator <= 0:
                return -math.inf, 0
            if absent <= 0:  # θ_jc = 1: present contributes log 1 = 0
                return 0.0, 1
            return log_ratio(present, denominator) - log_ratio(absent, denominator), 0

        unseen = [weight(0, c) for c in range(C)]  # a word absent from class c: D_jc = 0
        present_certain = [0] * C
        if not dense_cells(self.n_used, C):  # as the batch path: from the pairs alone

            def pair_weight(c: int, pair) -> float:
                w, certain = weight(pair[0], c)
                present_certain[c] += certain  # θ_jc = 1 only at a pair
                return w

            scores = self._from_pairs(
                [(j, 1) for j, _ in rows], [w for w, _ in unseen], bias, pair_weight
            )
            return [
                -math.inf if present_certain[c] < required[c] else scores[c] for c in range(C)
            ]
        for j, _ in rows:
            weights = unseen[:]
            for c, (D_jc, _) in self._entries(j).items():
                weights[c] = weight(D_jc, c)
            scores = [score + w for score, (w, _) in zip(scores, weights)]
            present_certain = [n + certain for n, (_, certain) in zip(present_certain, weights)]
        return [
            -math.inf if present_certain[c] < required[c] else scores[c] + bias[c]
            for c in range(C)
        ]

    def _from_pairs(self, rows, unseen: list[float], log_pi: list[float], weight) -> list[float]:
        """b_c = Σ_j x_j W_jc + log π_c for the document's ``rows`` (j, x_j) (x_j = 1 for
        presences; ``log_pi`` then holds the Bernoulli bias), where W_jc
        is ``weight(c, (D_jc, T_jc))`` at the pairs of word j and ``unseen[c]`` off them:
        work in proportion to the pairs of the document's words, not to its words × C.

        The steps of the batch path past :data:`nbclass.models.layout.DENSE_CELLS`
        (:meth:`nbclass.models.sparsity.SparseWeights.dot`): with k_c = ``unseen[c]``,
        Σ_j x_j (W_jc − k_c) over the pairs, words in order, then + n k_c (n the
        document's known tokens), then + log π_c. Where k_c = −∞ (no mass on unseen
        words), k_c counts as 0 and class c is impossible unless every word of the
        document is one of its pairs.
        """
        C = len(unseen)
        constant = [0.0 if k == -math.inf else k for k in unseen]
        sums, covered, total = [0.0] * C, [0] * C, 0
        for j, x in rows:
            total += x
            for c, pair in self._entries(j).items():
                sums[c] += x * (weight(c, pair) - constant[c])
                covered[c] += 1
        words = len(rows)
        return [
            -math.inf if unseen[c] == -math.inf and covered[c] < words
            else sums[c] + constant[c] * total + log_pi[c]
            for c in range(C)
        ]  # fmt: skip

    def _complement(self, rows: list[tuple[int, int]], beta: float) -> list[float]:
        """b_c = −Σ_j x_j log θ̃_jc, θ̃_jc = (T_j − T_jc + β) / (T − T_c + Vβ)."""
        C, V, T_c = len(self.classes), self.n_used, self.class_tokens
        T = sum(T_c)
        log_denominators = _logs([T - T_c[c] + V * beta for c in range(C)])
        if not dense_cells(V, C) and beta > 0 and None not in log_denominators:
            return self._complement_pairs(rows, beta, log_denominators)
        scores = [0.0] * C
        for j, x in rows:
            entries = self._entries(j)
            T_j = sum(t for _, t in entries.values())
            T_jc = [0] * C
            for c, (_, t) in entries.items():
                T_jc[c] = t
            # score − x_j log θ̃_jc
            scores = _add_complement(scores, -x, T_j, T_jc, beta, log_denominators)
        return scores

    def _complement_pairs(self, rows, beta: float, log_denominators: list[float]) -> list[float]:
        """:meth:`_complement` from the pairs of the document's words, the batch path's
        steps past 2^24 weight cells (:func:`nbclass.models.textmodels.sparse_weights`):
        off the pairs w_jc = g_j + k_c with g_j = −log(T_j + β), k_c = log(T − T_c + Vβ);
        Σ_j x_j (w_jc − g_j − k_c) over the pairs, then + n k_c, then + Σ_j x_j g_j.
        Every numerator T_j − T_jc + β is positive (β > 0), every denominator too."""
        log = math.log
        k = log_denominators
        C = len(k)
        sums, total, word_sum = [0.0] * C, 0, 0.0
        for j, x in rows:
            entries = self._entries(j)
            T_j = sum(t for _, t in entries.values())
            g = -log(T_j + beta)
            total += x
            word_sum += x * g
            for c, (_, t) in entries.items():
                sums[c] += x * (-(log(T_j - t + beta) - k[c]) - (k[c] + g))
        return [sums[c] + k[c] * total + word_sum for c in range(C)]

    def _transformed(self, rows, s: EstimatorSettings, prepared, log_pi) -> list[float]:
        """b_c = bias_c + Σ_j t_j w_jc with the transforms of :mod:`nbclass.models.textmodels`.

        t_j is the document's transformed count (log(1 + x_j), times idf_j, divided by the
        length ‖t‖₂); S_jc the transformed training sums of the document's words, from
        their D_jc and T_jc; the class totals and weight norms come from ``prepared``.
        """
        C, V = len(self.classes), self.n_used
        totals = prepared.class_totals
        N = sum(self.class_count)
        beta = s.beta[0]
        features, sums = [], []
        log_tf, log1p = s.tf == "log", math.log1p
        ptr, index, doc_count, token_count = (
            self.word_ptr, self.class_index, self.doc_count, self.token_count
        )
        for j, x in rows:
            t = log1p(x) if log_tf else float(x)
            S_j = [0.0] * C
            start, end = ptr[j], ptr[j + 1]  # word j's entries, as _entries reads them
            entries = zip(index[start:end], doc_count[start:end], token_count[start:end])
            if log_tf:
                for c, D_jc, T_jc in entries:
                    S_j[c] = D_jc * log1p(T_jc / D_jc)
            else:
                for c, _, T_jc in entries:
                    S_j[c] = float(T_jc)
            if s.idf:
                df = sum(D for D, _ in self._entries(j).values())
                idf = math.log(N) - math.log(df) if N > 0 else 0.0
                t *= idf
                S_j = [v * idf for v in S_j]
            features.append(t)
            sums.append(S_j)
        if s.norm in ("length", "both"):
            length = math.sqrt(sum(t * t for t in features))
            features = [t * (1.0 / length) if length > 0 else 0.0 for t in features]
        scores = [0.0] * C
        if s.model == "complement":
            log_denominators = _logs([totals[c] + V * beta for c in range(C)])
        else:
            log_denominators = _logs(
                [multinomial_fraction(0.0, totals[c], V, s.estimator, beta)[1] for c in range(C)]
            )
        complement, weight_norm = s.model == "complement", s.norm in ("weight", "both")
        for t, S_j in zip(features, sums):
            if complement:
                total = sum(S_j)
                if not weight_norm:  # score + t_j w_jc, w_jc = −log θ̃_jc
                    scores = _add_complement(scores, -t, total, S_j, beta, log_denominators)
                    continue
                numerators = [total - S + beta for S in S_j]
            else:
                numerators = [multinomial_fraction(S, 0, V, s.estimator, beta)[0] for S in S_j]
                if not weight_norm:  # score + t_j w_jc, w_jc = log θ_jc
                    scores = _add_log_ratios(scores, t, numerators, log_denominators)
                    continue
            weights = _log_ratios(numerators, log_denominators)
            if complement:
                weights = [-w for w in weights]
            norms = prepared.weight_norms
            weights = [w / norms[c] if norms[c] > 0 else 0.0 for c, w in enumerate(weights)]
            scores = [score + t * w for score, w in zip(scores, weights)]
        if s.norm in ("weight", "both"):
            log_pi = [0.0] * C
        return [score + log_pi[c] for c, score in enumerate(scores)]

    def _gamma_ratios(self, rows: list[tuple[int, int]], beta: float) -> list[float]:
        """Σ_j [lnΓ(a_jc + x_j) − lnΓ(a_jc)], a_jc = T_jc + β, per class: the words' part of
        both exact predictives (Pólya and negative binomial)."""
        words = [0.0] * len(self.classes)
        for j, x in rows:
            entries = self._entries(j)
            for c in range(len(words)):
                a = entries.get(c, (0, 0))[1] + beta
                words[c] += math.lgamma(a + x) - math.lgamma(a)
        return words

    def _polya(self, rows: list[tuple[int, int]], beta: float, log_pi) -> list[float]:
        """The Pólya predictive: Σ_j [lnΓ(a_jc + x_j) − lnΓ(a_jc)] − [lnΓ(A_c + n) − lnΓ(A_c)]."""
        C, V, T_c = len(self.classes), self.n_used, self.class_tokens
        words = self._gamma_ratios(rows, beta)
        n = sum(x for _, x in rows)
        scores = []
        for c in range(C):
            A = T_c[c] + V * beta
            length = math.lgamma(A + n) - math.lgamma(A) if n else 0.0
            scores.append(words[c] - length + log_pi[c])
        return scores

    def _poisson(self, rows: list[tuple[int, int]], s: EstimatorSettings, log_pi) -> list[float]:
        """Poisson counts (:mod:`nbclass.models.poisson`): Σ_j x_j (log λ_jc − Λ_c) for the plug-in
        estimators; the negative binomial predictive under ``predictive``."""
        from ..models.poisson import (  # only here: one document seldom meets a Poisson model
            negative_binomial_length_term,
            poisson_fraction,
            poisson_rate_total,
        )

        C, V, T_c, beta = len(self.classes), self.n_used, self.class_tokens, s.beta[0]
        if s.estimator == "predictive":
            scores = self._gamma_ratios(rows, beta)
            n = sum(x for _, x in rows)
            return [
                scores[c] + negative_binomial_length_term(T_c[c] + V * beta, n) + log_pi[c]
                for c in range(C)
            ]
        totals = [poisson_rate_total(T_c[c], V, s.estimator, beta) for c in range(C)]
        scores = [0.0] * C
        for j, x in rows:
            entries = self._entries(j)
            for c in range(C):
                T_jc = entries.get(c, (0, 0))[1]
                log_lambda = log_ratio(*poisson_fraction(T_jc, T_c[c], V, s.estimator, beta))
                scores[c] += x * (log_lambda - totals[c])
        return [score + log_pi[c] for c, score in enumerate(scores)]


_COUNT_SECTIONS = (
    "class_count", "doc_count", "token_count", "class_tokens", "histogram_value",
    "histogram_count", "ledger_count", "sample_count",
)  # fmt: skip


def _sizes_agree(s: dict, header: dict, V: int, C: int) -> bool:
    """Whether every section's length fits the others (the full loader checks far more).

    Cheap (constant time, or one pass at C speed over the used-word bits, the hashed
    columns' words or a 64-bit count section): the one-document path does not rebuild the
    counts, but a section that holds something else (a pickle, an array of another shape)
    has the wrong length, a negative count read as unsigned is at least 2^63, and the file
    is refused as the full loader refuses it, not used half-read.
    """
    nnz = s["word_ptr"][V] if len(s["word_ptr"]) == V + 1 else -1
    histogram_end = s["histogram_ptr"][C] if len(s["histogram_ptr"]) == C + 1 else -1
    vocabulary_end = len(s["vocabulary"]) + 1 if V else 0
    if (
        len(s["class_index"]) != nnz
        or len(s["doc_count"]) != nnz
        or len(s["token_count"]) != nnz
        or len(s["histogram_value"]) != histogram_end
        or len(s["histogram_count"]) != histogram_end
        or len(s["vocabulary_offsets"]) != V + 1
        or s["vocabulary_offsets"][V] != vocabulary_end
    ):
        return False
    if header["n_used"] != int.from_bytes(s["used"], "little").bit_count():
        return False
    for name in _COUNT_SECTIONS:  # stored in 64 bits only when huge: rarely scanned
        view = s.get(name)
        if view is not None and view.format == "Q" and len(view) and max(view) > 2**63 - 1:
            raise ValueError("count too large (a negative count, read as unsigned?)")
    for name, whose in (("class_count", "the"), ("token_count", "the"),
                        ("ledger_count", "the ledger's"), ("sample_count", "the sample's")):
        view = s.get(name)  # as the full loader: N, Σ T_jc and each list's sum < 2^63
        if view is not None and view.format == "Q" and sum(view) > 2**63 - 1:
            raise ValueError(f"count too large ({whose} counts sum past 2^63 - 1)")
    for prefix, record in (("ledger", header.get("ledger")), ("sample", header.get("sample"))):
        if f"{prefix}_ptr" not in s:
            continue
        n = record.get("documents") if isinstance(record, dict) else record
        ptr = s[f"{prefix}_ptr"]
        if (
            not isinstance(n, int)
            or len(s[f"{prefix}_digest"]) != 32 * n
            or len(s[f"{prefix}_label"]) != n
            or len(ptr) != n + 1
            or ptr[n] != len(s[f"{prefix}_word"])
            or len(s[f"{prefix}_count"]) != len(s[f"{prefix}_word"])
        ):
            return False
    if "column_words_ptr" in s:
        ptr = s["column_words_ptr"]
        if len(ptr) != V + 1 or ptr[V] != s["column_words"].tobytes().count(0):
            return False
    return True


def _logs(denominators: list[float]) -> list[float | None]:
    """log d of each denominator, ``None`` where d <= 0 (for :func:`_log_ratios`)."""
    return [math.log(d) if d > 0 else None for d in denominators]


def _log_ratios(numerators: list[float], log_denominators: list[float | None]) -> list[float]:
    """``[log_ratio(n, d) ...]`` given each log d from :func:`_logs`: the same numbers, with
    the logarithm of each class's denominator taken once, not once per word."""
    log, inf = math.log, math.inf
    return [
        -inf if n <= 0 or d is None else log(n) - d for n, d in zip(numerators, log_denominators)
    ]


def _add_log_ratios(
    scores: list[float], factor: float, numerators: list[float], log_denominators: list
) -> list[float]:
    """``score_c + factor · log_ratio(n_c, d_c)`` for each class, as
    ``[score + factor * w for score, w in zip(scores, _log_ratios(...))]`` computes it.

    One pass where every n_c > 0 and every d_c > 0 (the usual case: smoothed counts), else
    that very expression. ``factor`` may be −x for a subtraction: ``score + (−x) · w`` is
    ``score − x · w`` to the last bit, as negation is exact.
    """
    log = math.log
    try:
        return [
            score + factor * (log(n) - d)
            for score, n, d in zip(scores, numerators, log_denominators)
        ]
    except (ValueError, TypeError):  # log of n <= 0, or a d that is None (d <= 0): −inf
        weights = _log_ratios(numerators, log_denominators)
        return [score + factor * w for score, w in zip(scores, weights)]


def _add_complement(
    scores: list[float], factor: float, total, parts: list, beta: float, log_denominators: list
) -> list[float]:
    """:func:`_add_log_ratios` of the complement numerators n_c = total − part_c + β
    (computed in that order), in one pass where every ratio is finite."""
    log = math.log
    try:
        return [
            score + factor * (log(total - part + beta) - d)
            for score, part, d in zip(scores, parts, log_denominators)
        ]
    except (ValueError, TypeError):  # log of n <= 0, or a d that is None (d <= 0): −inf
        numerators = [total - part + beta for part in parts]
        return _add_log_ratios(scores, factor, numerators, log_denominators)


def reported(
    jll: list[float], known: int, class_count, settings: EstimatorSettings, calibration=None
) -> list[float]:
    """log p(c | x) as every command reports it, of one document of scores ``jll`` and
    ``known`` tokens in the vocabulary: :func:`nbclass.models.chosen.reported` in plain
    Python. The class prior of ``settings`` (N_c: ``class_count``) when ``known`` is 0;
    else softmax_c(b_c / T(x)) with the ``calibration``, softmax_c(b_c) without.

    >>> reported([-9.0, -1.0], 0, [3, 1], EstimatorSettings())  # no known word: π_c
    [-0.4054651081081644, -1.0986122886681096]
    """
    if known == 0:
        return no_evidence_posterior(class_count, settings)
    if calibration is None:
        return log_posterior(jll)
    scale = 1.0 / calibration.temperature(known, score_gap(jll))
    shift = calibration.shift(known)
    if shift is None:
        return log_posterior([b * scale for b in jll])
    return log_posterior([b * scale + s for b, s in zip(jll, shift)])


def score_document(
    model: QuickModel, text: str, settings: EstimatorSettings, calibration, abstention,
    show_evidence: bool,
) -> tuple[list[float], dict]:  # fmt: skip
    """``(log_proba, extra)`` of one document: its log posterior (C floats) and what
    predict adds to it (``log_evidence``, ``evidence_model``, ``reason``), as the batch
    path's :func:`nbclass.models.explain.extras` gives them.

    ``settings`` must be scorable here (:meth:`QuickModel.can_score`, and so must their
    evidence settings, :func:`nbclass.models.novelty.evidence_settings`);
    ``calibration`` is the model's :class:`nbclass.models.chosen.Calibration` or None;
    ``abstention`` an :class:`nbclass.models.abstain.Abstention` already set for the model
    (:meth:`~nbclass.models.abstain.Abstention.for_model`). ``show_evidence``: whether
    log p(x) is wanted when the chosen scores do not give it (JSONL shows it).
    """
    from ..models.abstain import log_sum_exp
    from ..models.novelty import evidence_settings

    evidence_by = evidence_settings(settings)
    jll = model.joint_log_likelihood(text, settings)
    known, tokens = model.known_tokens(text)
    row = reported(jll, known, model.class_count, settings, calibration)
    # Complement and transformed scores give the posterior but no probability of x: the
    # multinomial of the same counts gives the evidence (nbclass.models.novelty). Without
    # a typicality threshold or a format that shows it, it is not computed. A document
    # with no known word has observed nothing: log p(x) = 0.
    if known == 0:
        evidence = 0.0
    elif evidence_by == settings:
        evidence = log_sum_exp(jll)
    elif show_evidence or abstention.typicality_threshold is not None:
        evidence = log_sum_exp(model.joint_log_likelihood(text, evidence_by))
    else:
        evidence = None
    reason = abstention.reason(row, known, tokens, evidence)
    return row, {"log_evidence": evidence, "evidence_model": evidence_by.model, "reason": reason}


def log_posterior(jll: list[float]) -> list[float]:
    """log p(y = c | x) from joint log-likelihoods; all −inf when every class is impossible.

    >>> log_posterior([1000.0, 1000.0])
    [-0.6931471805599453, -0.6931471805599453]
    """
    top = max(jll)
    if top == -math.inf:
        return [-math.inf] * len(jll)
    shifted = [b - top for b in jll]
    log_total = math.log(sum(math.exp(t) for t in shifted))
    return [t - log_total for t in shifted]
