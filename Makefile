# The two commands of the README. Both set up .venv on first use (scripts/setup.sh).
#   make book   build the book, every chapter executed, into _build/html
#   make test   run every test: the linter (ruff, pyproject.toml), unit tests, the book build (-W),
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

.PHONY: setup book student-book test unit clean
setup:
	@bash scripts/setup.sh

book: setup
	$(ACT) && bash scripts/build_book.sh

student-book: setup
	$(ACT) && bash scripts/build_student_book.sh

unit: setup
	$(ACT) && ruff check
	$(ACT) && python -m pytest -m "not browser" -q

test: setup
	$(ACT) && ruff check
	$(ACT) && bash scripts/build_book.sh
	$(ACT) && bash scripts/build_student_book.sh
	$(ACT) && python -m pytest -q

clean:
	rm -rf _build
