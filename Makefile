# The README's two commands: `make book` and `make test`. Each sets up .venv from a fresh clone.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PRESET ?=

.PHONY: venv book book-student print clean test test-fast browser colab-check sync train retrain release help

help:
	@echo "make book    build the executed site into _build/html, the student edition (no"
	@echo "             solutions) into _build/student/_build/html and every figure as SVG"
	@echo "             into _build/figures, for slides (creates .venv first)"
	@echo "make print   print the whole book to _build/book.pdf (after make book)"
	@echo "make test    run the whole test suite"
	@echo "make browser open every page of the built site in headless Chromium (after make book)"
	@echo "make colab-check  run every chapter as on Colab: only the package's dependencies"
	@echo "make sync    render the chapters' setup cells from _config.yml, update the .ipynb pairs"
	@echo "make train PRESET=name   retrain a checkpoint under data/ (make train lists them)"
	@echo "make retrain  retrain every stale checkpoint in dependency order, two at a time"
	@echo "make clean   remove the built site and the execution cache"
	@echo "make release VERSION=X.Y.Z   tag a release pinned to vX.Y.Z (CONTRIBUTING.md)"

$(STAMP): requirements.txt pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

venv: $(STAMP)

# Cached build: only notebooks whose code changed re-execute. `make clean book` rebuilds all
# (CI does, because a change to icl_lib alone does not invalidate the cache).
# ICL_STATIC_WIDGETS=1: headless kernels draw each widget's first view instead of opening
# widget comms, which can stall a cell for its whole timeout (icl_lib.runtime).
# ICL_LIVE_FIGURES=1: each explorer is drawn once per stop of its sliders, for the site
# (icl_lib.live_figures).
# ICL_FIGURE_PACK=1: every figure is drawn as SVG too, for the figure pack (_build/figures).
# tools/execute_chapters.py first executes the pages the cache lacks, one per core (each
# kernel computes on one thread), so that jupyter-book finds them all in the cache.
book: $(STAMP)
	ICL_STATIC_WIDGETS=1 ICL_LIVE_FIGURES=1 ICL_FIGURE_PACK=1 $(PY) tools/execute_chapters.py
	ICL_STATIC_WIDGETS=1 ICL_LIVE_FIGURES=1 ICL_FIGURE_PACK=1 $(VENV)/bin/jupyter-book build . -W -n --keep-going
	@echo "site: _build/html/index.html   claims: _build/html/claims.json"
	$(PY) tools/figure_pack.py
	$(MAKE) --no-print-directory book-student

# The whole book as one PDF, printed by headless Chromium from a single-page build of the
# main build's cache (after make book; Debian's chromium).
print: $(STAMP)
	$(PY) tools/print_book.py

# The student edition: the same site without the exercises' solutions or the page sources,
# rebuilt from the main build's execution cache (no notebook runs again).
book-student: $(STAMP)
	$(PY) tools/student_config.py _build/student_config.yml
	ICL_STATIC_WIDGETS=1 $(VENV)/bin/jupyter-book build . --config _build/student_config.yml \
		--path-output _build/student -W -n --keep-going -q
	$(PY) tools/student_notebooks.py _build/student/_build/html/notebooks
	@echo "student edition: _build/student/_build/html/index.html"

clean:
	rm -rf _build

test: $(STAMP)
	$(PY) -m pytest -m "not browser"

test-fast: $(STAMP)
	$(PY) -m pytest -m "not slow and not browser"

# The built site in headless Chromium (needs `make book` first and Debian's chromium).
browser: $(STAMP)
	$(PY) -m pytest -m browser tests/browser

# Every chapter as a Colab reader runs it: a fresh venv with only the package's dependencies.
colab-check: $(STAMP)
	$(PY) tools/colab_check.py

sync: $(STAMP)
	$(PY) tools/sync_chapters.py

train: $(STAMP)
	$(PY) -m icl_lib.presets $(PRESET)

# A checkpoint is stale when its preset changed or its warm start's parent was retrained
# (the parent's hash in its manifest says which); logs in _build/train_logs/.
retrain: $(STAMP)
	$(PY) -m icl_lib.presets --stale --jobs 2

# A release a class can pin: two commits and the tag vX.Y.Z (tools/release.py), not pushed.
release: $(STAMP)
	@test -n "$(VERSION)" || (echo "usage: make release VERSION=X.Y.Z" && exit 1)
	$(PY) tools/release.py $(VERSION)
