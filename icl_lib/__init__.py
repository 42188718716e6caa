"""icl_lib: the library behind the executable textbook on the theory of in-context learning.

Modules, each one concept (see DESIGN.md section 4): ``tasks`` (prompt samplers), ``learners``
(classical in-context learners), ``models`` (transformers), ``train`` (presets, checkpoints),
``claims`` (paper vs book), ``plotting`` and ``widgets``. Import what you need from them:
nothing happens at import time.
"""

__version__ = "0.1.0"
