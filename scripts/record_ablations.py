#!/usr/bin/env python
"""Record the paper's section 5 ablations on this machine (lab.ablations; lab.ablations_reading reads the
record for chapter 17): pre-training tasks (MLM + NSP, MLM, LTR) and model sizes,
one fixed budget each, then one fine-tuning recipe, into data/ablations/ablations.json. One to two
hours on 2 CPU cores, minutes on a GPU; run it again to resume. On a GPU the plan can be split into
parts that run side by side and are merged afterwards (`lab.ablations.merge`): the scratch control
in one part, --no-scratch in the others.

    python scripts/record_ablations.py
    python scripts/record_ablations.py --steps 1000 --only "MLM, no NSP"
    python scripts/record_ablations.py --out runs/b --only "MLM + NSP" --no-scratch   # one part
    python scripts/record_ablations.py --merge runs/a runs/b runs/c                   # into data/ablations
"""

import argparse
import json
import sys
from pathlib import Path

from bertlab.files import write_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's lab/ (not installed)
from lab.ablations import STEPS, merge, record  # noqa: E402
from lab.ablations_reading import ABLATIONS_DIR, MODELS, RECORD_FILE  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--steps", type=int, default=STEPS, help=f"optimizer steps per model (default {STEPS})")
parser.add_argument("--out", default=str(ABLATIONS_DIR), help="folder of the record (default: data/ablations)")
parser.add_argument("--work", default="runs/ablations", help="folder of the pretraining runs (resumable)")
parser.add_argument("--only", nargs="*", choices=list(MODELS), help="only these models")
parser.add_argument(
    "--no-scratch",
    dest="scratch",
    action="store_false",
    help="leave out the scratch control (for parts run side by side, merged with ablations.merge)",
)
parser.add_argument("--no-compile", dest="compile", action="store_false", help="eager mode (no torch.compile)")
parser.add_argument(
    "--merge", nargs="+", metavar="FOLDER", help="merge the records of parts run side by side into --out; train nothing"
)
args = parser.parse_args()
if args.merge:
    parts = []
    for folder in args.merge:
        path = Path(folder) / RECORD_FILE
        if not path.exists():
            parser.error(f"{path} does not exist: run that part first (--out {folder})")
        parts.append(json.loads(path.read_text()))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    write_json(Path(args.out) / RECORD_FILE, merge(parts))
    print(f"merged {len(parts)} parts into {Path(args.out) / RECORD_FILE}")
    raise SystemExit
rec = record(
    args.out,
    args.work,
    steps=args.steps,
    compile=args.compile,
    only=tuple(args.only or ()) or None,
    scratch=args.scratch,
)
for name, m in rec["models"].items():
    fts = ", ".join(f"{t} {r['median']:.1f}" for t, r in m.get("finetune", {}).items())
    print(f"{name:16s} held-out {m['heldout']} | {fts}")
