#!/usr/bin/env python
"""Record the paper's section 5 ablations on this machine (bertlab.experiments.ablations): pre-training tasks
(MLM + NSP, MLM, LTR) and model sizes, one fixed budget each, then one fine-tuning recipe, into
data/ablations/ablations.json. About an hour on 2 CPU cores; run it again to resume.

    python scripts/record_ablations.py
    python scripts/record_ablations.py --steps 1000 --only "MLM, no NSP"
"""

import argparse

from bertlab.experiments.ablations import ABLATIONS_DIR, MODELS, STEPS, record

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
args = parser.parse_args()
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
