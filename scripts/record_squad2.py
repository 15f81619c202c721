#!/usr/bin/env python
"""Record SQuAD 2.0's answer-or-abstain rule on the book's own BERT (lab.squad2 makes the questions and
scores; bertlab.experiments.squad2 reads the record for chapter 13b).

SQuAD v1.1's dev set is split by article as the reference run splits it for SQuAD (SQUAD_CPU:
a quarter of the articles held out); each side gains unanswerable questions made from its own
(a question set beside another paragraph of its article without its answer). The record is
fine-tuned on the training side with the reference run's SQuAD recipe, one seed; then, on the
held-out side, every question gets its margin s_hat - s_null and tau is chosen to maximise
SQuAD 2.0's F1. The same is measured for the record with its span layer untrained, the state
chapter 13b starts from. Writes data/squad2/: results.json (settings, scores, every held-out
question's margin, the machine, the code's commit, the time) and the fine-tuned model in fp16
(model.safetensors, config.json, tokenizer.json; about 11 MB), which chapter 13b loads.

    python scripts/record_squad2.py --epochs 2              # about 16 minutes on 2 CPU cores
    python scripts/record_squad2.py --v1-epochs 2 --epochs 1 --fraction 0.2   # SQuAD v1.1 first

With --v1-epochs N the record is first fine-tuned for N epochs on the training side's answerable
questions alone (SQuAD v1.1, as chapter 13 fine-tunes it), and that model is then fine-tuned for
--epochs on the mix, whose share of unanswerable questions is --fraction; the held-out side keeps
--eval-fraction (0.5), so that its scores compare with a run without the first stage.
    python scripts/record_squad2.py --max-train 200 --max-eval 100 --out /tmp/squad2   # a smoke run
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

from bertlab import BertForQuestionAnswering
from bertlab import checkpoint as ckpt
from bertlab.data.tokenizer import load_tokenizer_for
from bertlab.experiments import reference, squad2
from bertlab.files import write_json
from bertlab.runtime import git_commit, machine, make_runtime
from bertlab.tasks import get_task
from bertlab.tasks.squad import featurize_squad, span_logits, split_by_article
from bertlab.training.finetune import FinetuneConfig, finetune

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the checkout's lab/ (not installed)
from lab import squad2 as maker  # noqa: E402
from lab.reference_run import SQUAD_CPU  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--fraction", type=float, default=0.5, help="unanswerable copies per answerable question")
parser.add_argument("--eval-fraction", type=float, default=0.5, help="the same, on the held-out side")
parser.add_argument("--v1-epochs", type=int, default=0, help="SQuAD v1.1 epochs before the mix (0: none)")
parser.add_argument("--other-article", type=float, default=0.5, help="share of them beside another article")
parser.add_argument("--epochs", type=int, default=SQUAD_CPU["epochs"])
parser.add_argument("--max-train", type=int, default=None, help="the first N answerable training questions")
parser.add_argument("--max-eval", type=int, default=None, help="the first N answerable held-out questions")
parser.add_argument("--out", default=str(squad2.SQUAD2_DIR))
args = parser.parse_args()

run = reference.find()
if run is None or run.smoke:
    raise SystemExit("no recorded reference run in data/reference_run/: nothing to fine-tune")
t0 = time.perf_counter()
commit = git_commit()  # the code this run started from, not what the checkout holds when it ends
folder = run.model_folder()
tok = load_tokenizer_for(folder)
train, held = split_by_article(
    get_task("squad").load("dev"), eval_fraction=SQUAD_CPU["eval_fraction"], seed=SQUAD_CPU["split_seed"]
)
train, held = train[: args.max_train], held[: args.max_eval]
train2 = maker.with_unanswerable(train, args.fraction, seed=0, other_article=args.other_article)
held2 = maker.with_unanswerable(held, args.eval_fraction, seed=1, other_article=args.other_article)
settings = {
    "split": {k: SQUAD_CPU[k] for k in ("eval_fraction", "split_seed")},
    "unanswerable_fraction": args.fraction,
    "eval_unanswerable_fraction": args.eval_fraction,
    "v1_epochs_first": args.v1_epochs,
    "other_article_share": args.other_article,
    "train_questions": len(train2),
    "train_unanswerable": len(train2) - len(train),
    "eval_questions": len(held2),
    "eval_unanswerable": len(held2) - len(held),
    **{k: SQUAD_CPU[k] for k in ("max_len", "doc_stride", "lr", "batch_size")},
    "epochs": args.epochs,
    "seed": 0,
}
print(settings, flush=True)


def scores_of(model):
    feats = featurize_squad(held2, tok, max_len=SQUAD_CPU["max_len"], doc_stride=SQUAD_CPU["doc_stride"])
    start, end = span_logits(model, feats)
    margins, answers = maker.question_margins(start, end, feats)
    scores = maker.squad2_scores(margins, answers, held2)
    return margins, maker.answer_scores(answers, held2), scores, maker.separations(margins, held2)


untrained = ckpt.load_model(folder, BertForQuestionAnswering).eval()
_, _, untrained_scores, untrained_sep = scores_of(untrained)
print("untrained span layer:", untrained_scores, untrained_sep, flush=True)


def fine_tune(init, examples, epochs, work):
    return finetune(
        FinetuneConfig(
            task="squad",
            init=str(init),
            max_len=SQUAD_CPU["max_len"],
            doc_stride=SQUAD_CPU["doc_stride"],
            epochs=epochs,
            lr=SQUAD_CPU["lr"],
            batch_size=SQUAD_CPU["batch_size"],
            seeds=(0,),
            eval_every_epoch=False,
            out=work,
            save_models=True,
        ),
        train_examples=examples,
        eval_examples=held,  # SQuAD v1.1's scores on the answerable held-out questions
    )


v1_first = None
with tempfile.TemporaryDirectory() as work:
    init = folder
    if args.v1_epochs:
        first = fine_tune(folder, train, args.v1_epochs, str(Path(work) / "v1"))
        print("SQuAD v1.1 first:", first.summary(), flush=True)
        init = Path(work) / "v1" / "seed-0"
        v1_model = ckpt.load_model(init, BertForQuestionAnswering).eval()
        _, _, v1_scores, v1_sep = scores_of(v1_model)
        print("after SQuAD v1.1:", v1_scores, v1_sep, flush=True)
        v1_first = {
            "v1_answerable_only": first.runs[0].metrics,
            "squad2": v1_scores,
            "separation": v1_sep,
            "seconds": round(first.runs[0].seconds, 1),
        }
    result = fine_tune(init, train2, args.epochs, str(Path(work) / "mix"))
    print(result.summary(), flush=True)
    model = ckpt.load_model(Path(work) / "mix" / "seed-0", BertForQuestionAnswering).eval()
margins, span_f1, trained_scores, trained_sep = scores_of(model)
print("fine-tuned:", trained_scores, trained_sep, flush=True)

out = Path(args.out)
ckpt.save_model(out / "model", model, dtype=torch.float16, tokenizer_file=folder / "tokenizer.json")
write_json(
    out / squad2.RECORD_FILE,
    {
        "about": "SQuAD 2.0's answer-or-abstain rule on the book's own BERT, with unanswerable questions made "
        "from SQuAD v1.1 (lab.squad2); scores in percent on the held-out articles",
        "command": " ".join(["python scripts/record_squad2.py", *sys.argv[1:]]),
        "record": run.short_label(),
        "settings": settings,
        "fine_tuned": trained_scores,
        "untrained_span_layer": untrained_scores,
        "separation": {"untrained_span_layer": untrained_sep, "fine_tuned": trained_sep},
        "v1_answerable_only": result.runs[0].metrics,
        "after_v1_first": v1_first,  # the model after the SQuAD v1.1 stage (None without one)
        "margins": [round(float(m), 3) for m in margins],
        "has_answer": [bool(ex.answers) for ex in held2],
        "kind": [maker.kind_of(ex) for ex in held2],
        "span_f1": [round(float(f), 4) for f in span_f1],  # each question's best span against its gold answers
        "seconds": round(time.perf_counter() - t0, 1),
        "finetune_seconds": round(result.runs[0].seconds + (v1_first or {}).get("seconds", 0.0), 1),
        "machine": machine(make_runtime("cpu", "auto", distributed=False)),
        "git_commit": commit,
    },
)
print(f"wrote {out}", flush=True)
