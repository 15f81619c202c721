"""The lab: how the book's recorded results were made and measured, beside the package, not in it.

The speed studies (`lab.speed`, `lab.finetune_speed`), the benchmarks that make their records
(lab/benchmarks/), the lab notebook's pages (lab/notebook/) and their tests (lab/tests/). It is not
installed with bertlab (pyproject.toml packages only bertlab*): import it from a checkout, with the
repository root on sys.path. It uses only bertlab's public names, and bertlab never imports it
(tests/test_architecture.py checks both).
"""
