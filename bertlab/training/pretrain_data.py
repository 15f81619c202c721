"""The data of one pretraining run, assembled from bertlab.data's pieces as its config asks: the
vocabulary (trained, given, or a resumed checkpoint's), one set of examples per sequence-length
phase, the fixed held-out batches and the unigram prior for the MLM bias. With several processes,
rank 0 builds and caches each piece first and the others read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch
import torch.distributed as dist

from bertlab import checkpoint as ckpt
from bertlab.data.corpus import load_corpus
from bertlab.data.masking import make_collator
from bertlab.data.pretraining_data import PhasedBatches, PretrainingBatches, prepare_pretraining_data, unigram_log_probs
from bertlab.data.tokenizer import WordPieceTokenizer, train_wordpiece
from bertlab.runtime import Runtime
from bertlab.training.batch_feed import BatchSource
from bertlab.training.heldout import EVAL_SEED, heldout_batches
from bertlab.training.pretrain_config import PretrainConfig


@dataclass
class PretrainingData:
    train: BatchSource  # endless, resumable, masked global batches
    eval_batches: list[dict[str, torch.Tensor]]  # fixed, masked held-out batches
    tokenizer: Any
    tokenizer_file: Path
    unigram_log_probs: torch.Tensor | None = None  # (V,) log frequencies of the training tokens


def _main_first(rt: Runtime, fn: Callable[[], Any]) -> Any:
    """Run fn on rank 0 first (it builds and caches), then on the others (they read the cache)."""
    if not rt.dist.enabled:
        return fn()
    result = fn() if rt.dist.is_main else None
    dist.barrier()
    return result if rt.dist.is_main else fn()


def prepare_data(cfg: PretrainConfig, rt: Runtime) -> PretrainingData:
    """Corpus -> WordPiece vocabulary (of the "train" documents) -> memory-mapped examples under
    <out>/data (reused when unchanged) -> batches masked on the fly (next-token labels for "ltr")."""
    r = cfg.resolved_recipe()
    out = Path(cfg.out)
    docs = load_corpus(cfg.corpus, "train")[: cfg.max_documents]
    heldout = load_corpus(cfg.corpus, "heldout")
    if cfg.max_documents is not None:  # a quick run: a quick evaluation too
        heldout = heldout[: max(2, cfg.max_documents)]
    tok_dir = out / "tokenizer"

    resume_from = ckpt.latest_checkpoint(out / "checkpoints") if cfg.resume else None
    resumed_vocab = resume_from / "tokenizer.json" if resume_from is not None else None

    def get_tokenizer():
        if cfg.tokenizer is not None:
            tok = WordPieceTokenizer.load(cfg.tokenizer)
            if resumed_vocab is not None and resumed_vocab.exists():
                saved = WordPieceTokenizer.load(resumed_vocab)
                if saved.fingerprint != tok.fingerprint:  # check before anything is overwritten
                    raise ValueError(
                        f"cannot resume from {resume_from}: it was trained with a different vocabulary "
                        f"({saved.vocab_size} pieces, fingerprint {saved.fingerprint[:12]}) than --tokenizer "
                        f"{cfg.tokenizer} ({tok.vocab_size} pieces, fingerprint {tok.fingerprint[:12]}). "
                        f"Resume without --tokenizer, or start a new run in another --out folder."
                    )
            if rt.dist.is_main:
                tok.save(tok_dir)
            return tok
        if resumed_vocab is not None and resumed_vocab.exists():
            return WordPieceTokenizer.load(resumed_vocab)
        if (tok_dir / "tokenizer.json").exists():  # a resumed run, or another process built it
            tok = WordPieceTokenizer.load(tok_dir)
            if tok.vocab_size == cfg.vocab_size or not rt.dist.is_main:
                return tok
        tok = train_wordpiece((s for d in docs for s in d.sentences), vocab_size=cfg.vocab_size)
        tok.save(tok_dir)
        return tok

    tokenizer = _main_first(rt, get_tokenizer)

    phases = r.training_phases()
    lengths = sorted({ph.seq_len for ph in phases})

    def get_examples():
        # one set of examples per sequence length (a run without phases keeps its folder name)
        folder = {T: "train" if not r.phases else f"train-{T}" for T in lengths}
        train = {
            T: prepare_pretraining_data(
                docs, tokenizer, out / "data" / folder[T], max_len=T, nsp=r.nsp, pairs=r.segment_pairs, seed=cfg.seed
            )
            for T in lengths
        }
        held = prepare_pretraining_data(
            heldout,
            tokenizer,
            out / "data" / "heldout",
            max_len=r.seq_len,
            nsp=r.nsp,
            pairs=r.segment_pairs,
            seed=EVAL_SEED,
        )
        return train, held

    train_sets, held_ds = _main_first(rt, get_examples)
    streams = []
    for k, ph in enumerate(phases):  # each phase its own masks and order (the first: the run's seed)
        collator = make_collator(cfg.objective, tokenizer, r.mlm_probability, cfg.whole_word, seed=cfg.seed + k)
        streams.append(PretrainingBatches(train_sets[ph.seq_len], ph.batch_size, collator, seed=cfg.seed + k))
    source = streams[0] if len(streams) == 1 else PhasedBatches(streams)
    eval_bs = min(r.batch_size, 64, len(held_ds))
    # held-out: single pieces at the paper's rate, whatever the run trains with: every run scored alike
    eval_batches = heldout_batches(held_ds, tokenizer, cfg.objective, eval_bs, cfg.eval_batches)
    train_ds = train_sets[phases[0].seq_len]
    if rt.dist.is_main:
        shapes = "; ".join(
            f"{len(train_sets[ph.seq_len]):,} training sequences of {ph.seq_len} tokens"
            + (f" ({ph.fraction:.0%} of the {cfg.phase_plan}, {ph.batch_size} a batch)" if len(phases) > 1 else "")
            for ph in phases
        )
        print(
            f"data: {shapes} from {len(docs)} documents; {len(eval_batches)} held-out batches of {eval_bs} "
            f"({r.seq_len} tokens) from {len(heldout)} documents; vocabulary {tokenizer.vocab_size:,}",
            flush=True,
        )
    prior = None
    if r.mlm_bias == "unigram":
        # pieces never predicted get -1e4; a left-to-right LM does predict [SEP]
        never = [tokenizer.pad_id, tokenizer.cls_id, tokenizer.mask_id]
        if cfg.objective != "ltr":
            never.append(tokenizer.sep_id)
        prior = unigram_log_probs(train_ds, tokenizer.vocab_size, exclude=never)
    return PretrainingData(source, eval_batches, tokenizer, tok_dir / "tokenizer.json", prior)
