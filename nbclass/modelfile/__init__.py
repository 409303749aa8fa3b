"""Model files: a model as bytes and back.

The container shared by every model file (:mod:`.fileformat`), the checked JSON header
(:mod:`.header`), text model files (:mod:`.textfile`), table model files
(:mod:`.tablefile`), the one-document reader that needs no numpy (:mod:`.quick`), and the
export of a model as a linear function (:mod:`.export`).
"""
