"""The model a service scores with, and its replacement when the file is replaced.

fit, update and sync write a model file atomically: a temporary file renamed over the
old one, so the path names a new inode. :class:`LoadedModel` holds everything one model
file gives (read once, as bytes, so the full model and the one-document reader see the
same file); :class:`ModelHolder` keeps the current one and, when asked to
(:meth:`ModelHolder.check`), compares the file's identity (device, inode, size,
modification time) with the loaded one's and loads the new file. A request takes the
current :class:`LoadedModel` once and scores with it alone, so no request mixes two
models; the switch is one assignment. A new file that cannot be loaded is refused, said
once in the log, and the old model keeps serving until the file changes again.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from functools import cached_property

from ..errors import ModelKindError, NbclassError


def file_identity(path: str) -> tuple | None:
    """``(device, inode, size, mtime in ns)`` of ``path``, or None when it cannot be
    looked at (being replaced, removed: the loaded model stays)."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


class LoadedModel:
    """One model file, loaded for scoring.

    Attributes
    ----------
    path : str
    identity : tuple
        The file's :func:`file_identity` when it was read.
    sha256 : str
        Of the file's bytes (``/info`` and the ``X-Nbclass-Model`` header name it).
    model : nbclass.models.model.Model
    quick : nbclass.modelfile.quick.QuickModel
        The one-document reader of the same bytes (``predict``'s path for one document).
    settings : EstimatorSettings
        The model's defaults, which the service scores with.
    loaded_at : float
        ``time.time()`` when it was loaded.
    """

    def __init__(self, path: str):
        from ..modelfile.fileformat import read
        from ..modelfile.quick import QuickModel
        from ..modelfile.textfile import loads
        from ..models.estimators import resolve
        from ..models.novelty import evidence_settings

        for _ in range(5):  # replaced while it was read: read the new file
            identity = file_identity(path)
            data = bytes(read(path))
            if identity is not None and identity == file_identity(path):
                break
        try:
            self.model = loads(data, path, scoring=True)
        except ModelKindError as exc:
            raise NbclassError(
                f"{path!r} is a {exc.kind} model: nbclass serve classifies text, with a "
                "model fitted on documents"
            ) from None
        if self.model.multi_label is not None:
            raise NbclassError(
                f"{path!r} is a multi-label model: nbclass serve answers with one class per "
                "document; classify with nbclass predict -m MODEL, which gives label sets"
            )
        self.quick = QuickModel(path, data=data)
        self.path, self.identity = path, identity
        self.sha256 = hashlib.sha256(data).hexdigest()
        self.settings = resolve(self.model.defaults)
        self.classes = list(self.model.active_counts.classes)
        self.loaded_at = time.time()
        self.quick_scores = self.quick.can_score(self.settings) and self.quick.can_score(
            evidence_settings(self.settings)
        )
        self._lock = threading.Lock()
        self._warm()

    def _warm(self) -> None:
        """Build the classifier and score a document on each path now, so that the
        first request pays neither for them nor for the imports they make."""
        from ..models.abstain import Abstention
        from ..models.explain import extras, score_batch

        classifier = self.classifier(True)
        scored = score_batch(classifier, [("-", self.classes[0])])
        if hasattr(classifier.scorer, "contributions"):
            extras(classifier, scored, Abstention(), explain=1)
        if self.quick_scores:
            self.quick.joint_log_likelihood(self.classes[0], self.settings)

    def classifier(self, calibrated: bool):
        """The :class:`nbclass.models.model.Classifier` of the model's defaults, with its
        calibration (if it has one) or without; each built once."""
        with self._lock:
            return self._calibrated if calibrated else self._uncalibrated

    @cached_property
    def _calibrated(self):
        from ..models.model import Classifier, scoring_settings

        settings, calibrate = scoring_settings(self.model, {}, True)
        classifier = Classifier(self.model, settings, calibrate=calibrate)
        classifier.counter  # noqa: B018 - the vocabulary, built once here
        return classifier

    @cached_property
    def _uncalibrated(self):
        from ..models.model import Classifier

        if self.model.calibration is None:
            return self._calibrated
        return Classifier(
            self.model, self.settings, counter=self._calibrated.counter, calibrate=False
        )

    @property
    def calibration(self):
        """The model's stored calibration, or None."""
        return self.model.calibration

    def info(self) -> dict:
        """What ``GET /info`` says of the model."""
        return {
            "path": self.path,
            "sha256": self.sha256,
            "loaded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.loaded_at)),
            "classes": self.classes,
            "settings": self.settings.to_dict(),
            "calibrated": self.model.calibration is not None,
            "typicality": self.model.typicality is not None,
            "documents": int(sum(self.model.active_counts.class_count)),
            "words": len(self.model.active_counts.vocabulary),
        }


class ModelHolder:
    """The current :class:`LoadedModel` of ``path``, replaced when the file is.

    ``log(line)`` writes one line of the service's log.
    """

    def __init__(self, path: str, log):
        self.path, self.log = path, log
        self.current = LoadedModel(path)
        self._refused: tuple | None = None  # the identity of a file that failed to load

    def changed(self) -> bool:
        """Whether the file at the path is another than the loaded one (and than the
        last one refused)."""
        identity = file_identity(self.path)
        return identity is not None and identity not in (self.current.identity, self._refused)

    def check(self, force: bool = False) -> bool:
        """Load the file if it changed (or, with ``force``, in any case: SIGHUP); True
        when a new model now serves. A file that cannot be loaded is logged and refused;
        the current model stays."""
        if not (force or self.changed()):
            return False
        identity = file_identity(self.path)
        try:
            new = LoadedModel(self.path)
        except NbclassError as exc:
            if force or identity != self._refused:
                self.log(
                    f"refused the new model file: {exc} (still serving "
                    f"{self.current.sha256[:16]})"
                )
            self._refused = identity
            return False
        self._refused = None
        old, self.current = self.current, new
        if new.sha256 == old.sha256:
            self.log(f"reloaded {self.path!r}: the same model ({new.sha256[:16]})")
        else:
            self.log(
                f"loaded {self.path!r}: model {new.sha256[:16]} replaces {old.sha256[:16]}"
            )
        return True
