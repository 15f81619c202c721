#!/usr/bin/env python
"""Record what the book's pretrained BERT knows about sentiment before any fine-tuning: a linear
probe (lab.linear_probe) on its frozen sentence vectors, against the same probe on randomly
initialised twins of the same size, on the first 500 / 2,000 / 8,000 SST-2 training sentences
(the subsets of the fine-tuning curve), scored on all of SST-2 dev. Writes data/pilots/sst2_probe.json.

    python scripts/record_sst2_probe.py                 # the committed record, 3 random twins
    python scripts/record_sst2_probe.py --sizes 500 2000 --twins 1
"""

import argparse
import sys
import time
from pathlib import Path

import torch

from bertlab import BertForPreTraining, BertModel
from bertlab import checkpoint as ckpt
from bertlab.data.task_data import read_sst2
from bertlab.data.tokenizer import load_tokenizer_for
from bertlab.experiments import reference
from bertlab.files import write_json
from bertlab.runtime import git_commit, machine

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's lab/ (not installed)
from lab import pilots  # noqa: E402
from lab.linear_probe import linear_probe, sentence_vectors  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 8000])
parser.add_argument("--twins", type=int, default=3, help="randomly initialised twins (seeds 0..N-1)")
parser.add_argument("--out", default=str(pilots.PILOTS_DIR / "sst2_probe.json"))
args = parser.parse_args()

run = reference.find()
if run is None or run.smoke:
    raise SystemExit("no recorded reference run in data/reference_run/: nothing to probe")
folder = run.model_folder()
tokenizer = load_tokenizer_for(folder)
pretrained = ckpt.load_model(folder, BertForPreTraining).bert
train, _ = read_sst2("train")
dev, _ = read_sst2("dev")
train = train[: max(args.sizes)]
y_train = torch.tensor([e.label for e in train])
y_dev = torch.tensor([e.label for e in dev])
encoders = [("pretrained", 0, pretrained)]
for seed in range(args.twins):
    torch.manual_seed(seed)
    encoders.append(("random", seed, BertModel(pretrained.config)))
rows = []
t0 = time.perf_counter()
vectors = {
    (init, seed): (
        sentence_vectors(m, tokenizer, [e.sentence for e in train]),
        sentence_vectors(m, tokenizer, [e.sentence for e in dev]),
    )
    for init, seed, m in encoders
}
for (init, seed), (x_train, x_dev) in vectors.items():
    for layer in range(x_train.shape[0]):
        for n in args.sizes:
            r = linear_probe(x_train[layer, :n], y_train[:n], x_dev[layer], y_dev)
            rows.append(
                {
                    "init": init,
                    "seed": seed,
                    "layer": layer,
                    "train_examples": n,
                    "accuracy": round(r.accuracy, 2),
                    "l2": r.l2,
                }
            )
            print(rows[-1], flush=True)
c = pretrained.config
write_json(
    args.out,
    {
        "about": "A linear probe (lab.linear_probe: logistic regression, L2 penalty chosen on a "
        "fifth of the "
        "training vectors) on frozen mean-pooled sentence vectors at every hidden state (layer 0 = "
        "the embedding output), the first N SST-2 training sentences, scored on all of SST-2 dev: "
        "the book's pretrained BERT against randomly initialised twins of the same size.",
        "encoder": {
            "L": c.num_layers,
            "H": c.hidden_size,
            "A": c.num_heads,
            "vocab_size": c.vocab_size,
            "record": run.label(),
        },
        "dev_examples": len(dev),
        "machine": {
            **machine(),
            "threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "precision": "fp32",
        },
        "seconds": round(time.perf_counter() - t0, 1),
        "git_commit": git_commit(),
        "rows": rows,
    },
)
print(args.out)
