"""The lab: how the book's recorded results were made and measured, beside the package, not in it.

- `lab.reference_run`: the book's own BERT, made end to end (`python -m lab.reference_run`);
- `lab.ablations`, `lab.ablations_reading`: the paper's section 5 ablations, each at one budget, made
  and read (chapters 9 and 17 show them from data/results/ablations.json);
- `lab.rerun`, `lab.time_budget`, `lab.finetune_rates`: the record's settings made again, under
  other budgets, and its comparison at each arm's best learning rate;
- `lab.speed`, `lab.finetune_speed` and lab/benchmarks/: what makes training fast on a CPU;
- `lab.record_gains`, `lab.charts`, `lab.linear_probe`: the record's gains task by task, the
  charts of the lab's records, and what its frozen sentence vectors already say about sentiment;
- `lab.findings`: the openings of chapters 10 to 14 and 17, from the record and the studies;
- `lab.publish`: what the chapters show of these studies, written as data/results/*.json
  (`python -m lab.publish`; `--check` says whether the committed files are stale);
- `lab.publish_records`: the package's manifest of data/, and a folder that serves every chapter
  offline (`python -m lab.publish_records --manifest` / `--out DIR`);
- lab/notebook/: the book's "Lab notebook" pages; lab/tests/: their tests.

It is not installed with bertlab (pyproject.toml packages only bertlab*): import it from a
checkout, with the repository root on sys.path. It uses only bertlab's public names, and bertlab
never imports it (tests/test_architecture.py checks both).
"""
