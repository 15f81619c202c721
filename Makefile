# The two commands of the README. Both set up .venv on first use (scripts/setup.sh).
#   make book   build the book, every chapter executed, into _build/html
#   make test   run every test: the linter and formatter check (make lint), unit tests, the book build (-W),
#               the student book build (-W), browser checks of the built pages
#   make student-book   the student book only (exercises without solutions): _build/student
SHELL := /bin/bash
VENV := .venv
ACT := . $(VENV)/bin/activate
# Datasets come from their canonical URLs unless a local mirror is named; next to a
# checkout that has ../shared/data (CI, the team's machines) that mirror is used.
BERTLAB_DATA_MIRROR ?= $(wildcard $(CURDIR)/../shared/data)
export BERTLAB_DATA_MIRROR
export HF_HUB_OFFLINE ?= 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export TOKENIZERS_PARALLELISM := false
export PYTHONUNBUFFERED := 1

.PHONY: setup book student-book test unit lint format clean
setup:
	@bash scripts/setup.sh

book: setup
	$(ACT) && bash scripts/build_book.sh

student-book: setup
	$(ACT) && bash scripts/build_student_book.sh

# The formatter and linter: the package, tests and scripts at 120 columns (pyproject.toml), the
# chapters' code cells at 88 (book/ruff.toml: what a rendered page shows without scrolling).
lint: setup
	$(ACT) && ruff check && ruff check book
	$(ACT) && ruff format --check && ruff format --check book

format: setup
	$(ACT) && ruff format && ruff format book

unit: lint
	$(ACT) && python -m pytest -m "not browser" -q

test: lint
	$(ACT) && bash scripts/build_book.sh
	$(ACT) && bash scripts/build_student_book.sh
	$(ACT) && python -m pytest -q

clean:
	rm -rf _build
