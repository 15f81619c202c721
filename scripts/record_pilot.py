#!/usr/bin/env python
"""Record a pretraining run as a pilot in data/pilots/<name>.json (its settings and held-out curve).

python -m bertlab pretrain --preset tiny --recipe budget --steps 1200 --out runs/pilot-budget ...
python scripts/record_pilot.py runs/pilot-budget --name budget-tiny --change "the budget recipe"
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's lab/ (not installed)
from lab.pilots import PILOTS_DIR, record_pilot  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("run", help="a run folder of `python -m bertlab pretrain` (run.json + metrics.jsonl)")
parser.add_argument("--name", required=True, help="file name of the pilot (without .json)")
parser.add_argument("--change", required=True, help="what this pilot changes, in words")
parser.add_argument("--out", default=str(PILOTS_DIR), help="folder of the pilot files (default: data/pilots)")
parser.add_argument("--baseline", default=None, help="the pilot file (name) this one changes one thing of")
args = parser.parse_args()
print(record_pilot(args.run, args.name, args.change, args.out, baseline=args.baseline))
