"""The book's recorded reference run: find it, describe it, load its model.

`scripts/reference_run.sh` (one GPU, about 15 minutes) pre-trains the book's own BERT and
fine-tunes it on SST-2, then writes a small, self-describing record into data/reference_run/:

    metrics.jsonl            the pretraining log (loss, MLM / NSP accuracy, lr, tokens/s, MFU)
    config.json              the model's size (a bertlab BertConfig)
    tokenizer.json, vocab.txt the WordPiece vocabulary it was trained with
    model.fp16.safetensors   the pretrained weights in fp16
    finetune_results.json    SST-2 dev scores, pre-trained and from scratch, every seed
    provenance.json          command, git commit, GPU, wall times, corpus checksums, weights sha256

The part II chapters run a CPU-sized version of their experiment at book-build time and show
the recorded run beside it. They call

    run = reference.find()          # a ReferenceRun, or None before the run is recorded
    print(run.label())              # "RECORDED on NVIDIA H100 ..., commit ..., ..."
    model = run.load(BertForPreTraining)
    enc = reference.pretrained_encoder()  # the reference model if recorded, else a stand-in

When the record is absent, `pending()` is the notice the chapters print instead: no number is
shown for a run that has not happened.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

ENV_VAR = "BERTLAB_REFERENCE_RUN"
WEIGHTS = "model.fp16.safetensors"
REQUIRED = ("config.json", WEIGHTS, "tokenizer.json", "provenance.json")
REPRODUCE = "scripts/reference_run.sh"


class IncompleteReferenceRun(FileNotFoundError):
    """A reference-run folder that lacks some of its files."""


def _default_places() -> list[Path]:
    root = Path(__file__).resolve().parents[1]  # the checkout (editable install)
    here = Path.cwd()
    return [root / "data" / "reference_run", here / "data" / "reference_run",
            here.parent / "data" / "reference_run"]  # chapters run from book/


@dataclass(frozen=True)
class ReferenceRun:
    """One recorded reference run, in the folder `path`."""

    path: Path

    @cached_property
    def provenance(self) -> dict[str, Any]:
        return json.loads((self.path / "provenance.json").read_text())

    @property
    def smoke(self) -> bool:
        """True for a CPU-sized smoke run (reference_run.sh --smoke), not the real record."""
        return bool(self.provenance.get("smoke", False))

    def label(self) -> str:
        """One line saying what this record is: hardware, commit, time; never mistaken for a
        number computed while the page was built."""
        p = self.provenance
        kind = "SMOKE-TEST run (CPU size, not the real record)" if self.smoke else "RECORDED run"
        commit = str(p.get("git_commit") or "unknown")[:10]
        minutes = p.get("wall_time_s")
        took = f", {minutes / 60:.1f} min end to end" if isinstance(minutes, (int, float)) else ""
        return (f"{kind} on {p.get('device', 'an unknown device')}, commit {commit}{took} "
                f"(not run while building this page; reproduce with {REPRODUCE})")

    def metrics(self) -> list[dict[str, Any]]:
        """The pretraining log, one dict per line of metrics.jsonl (empty if absent)."""
        f = self.path / "metrics.jsonl"
        if not f.exists():
            return []
        return [json.loads(line) for line in f.read_text().splitlines() if line.strip()]

    def finetune_results(self) -> dict[str, Any] | None:
        """SST-2 results by initialisation ("pretrained", "scratch"), or None if absent."""
        f = self.path / "finetune_results.json"
        return json.loads(f.read_text()) if f.exists() else None

    def config(self):
        from bertlab.config import BertConfig
        return BertConfig.load(self.path / "config.json")

    def tokenizer(self):
        from bertlab.tokenizer import WordPieceTokenizer
        return WordPieceTokenizer.load(self.path / "tokenizer.json")

    def verify(self) -> None:
        """Check the weights against the sha256 in provenance.json (a corrupt or truncated copy
        raises ValueError naming the file)."""
        from bertlab.checkpoint import file_sha256
        want = (self.provenance.get("weights") or {}).get("sha256")
        if want is None:
            return
        got = file_sha256(self.path / WEIGHTS)
        if got != want:
            raise ValueError(f"{self.path / WEIGHTS} is corrupt: sha256 {got[:16]}..., provenance.json "
                             f"says {want[:16]}...; restore it (git checkout -- {self.path}) or re-run "
                             f"{REPRODUCE}")

    def model_folder(self, cache: str | Path | None = None) -> Path:
        """A bertlab model folder (fp32 model.safetensors, config.json, tokenizer.json) holding
        the reference weights, so that everything taking a folder accepts it:
        `finetune(init=str(run.model_folder()))`. Written once per weights file, atomically."""
        from safetensors.torch import load_file, save_file

        from bertlab.checkpoint import _fsync_file, _replace_dir, file_sha256
        self.verify()
        key = file_sha256(self.path / WEIGHTS)[:16]
        base = Path(cache) if cache else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        folder = base / "bertlab" / "reference_run" / key
        if (folder / "model.safetensors").exists():
            return folder
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = folder.with_name(f".tmp-{key}-{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        sd = {k: (v.float() if v.is_floating_point() else v) for k, v in load_file(str(self.path / WEIGHTS)).items()}
        save_file(sd, str(tmp / "model.safetensors"), metadata={"format": "pt", "bertlab_class": "BertForPreTraining"})
        _fsync_file(tmp / "model.safetensors")
        for name in ("config.json", "tokenizer.json"):
            shutil.copyfile(self.path / name, tmp / name)
        _replace_dir(tmp, folder)
        return folder

    def load(self, model_cls: type | None = None, **head_kwargs: Any):
        """The pretrained model in fp32 (BertForPreTraining by default; a fine-tuning class gets
        the encoder and a fresh task layer), on the CPU, in eval mode."""
        from bertlab import checkpoint as ckpt
        from bertlab.model import BertForPreTraining
        return ckpt.load_model(self.model_folder(), model_cls or BertForPreTraining, **head_kwargs).eval()


def find(path: str | Path | None = None) -> ReferenceRun | None:
    """The recorded reference run: `path`, else $BERTLAB_REFERENCE_RUN, else data/reference_run in
    the checkout (or beside the chapters). None when no record exists. A folder that exists but
    lacks some of the files raises IncompleteReferenceRun naming them."""
    explicit = path or os.environ.get(ENV_VAR)
    places = [Path(explicit)] if explicit else _default_places()
    for place in places:
        if not place.is_dir():
            if explicit:
                raise FileNotFoundError(f"no reference run at {place} ({'argument' if path else ENV_VAR}); "
                                        f"point it at the folder {REPRODUCE} wrote")
            continue
        present = [f for f in REQUIRED if (place / f).exists()]
        if not present and not explicit:
            continue  # an empty data/reference_run/: not recorded
        missing = [f for f in REQUIRED if f not in present]
        if missing:
            raise IncompleteReferenceRun(f"{place} is an incomplete reference run: missing {', '.join(missing)}; "
                                         f"restore the folder from git or re-run {REPRODUCE}")
        return ReferenceRun(place.resolve())
    return None


def pending(what: str = "its results") -> str:
    """The notice a chapter prints where the recorded run would be shown (Markdown)."""
    return (f"> **Pending: the recorded GPU reference run is not in this copy of the book yet.** "
            f"This is where {what} will appear, labelled with the GPU, commit and time it took, once it "
            f"has been recorded with `{REPRODUCE}` (it writes `data/reference_run/`). No numbers are "
            f"shown for a run that has not happened; everything above ran while this page was built.")


@dataclass(frozen=True)
class PretrainedEncoder:
    """A pre-trained encoder for the chapters: a model folder, its tokenizer and what it is."""

    name: str
    folder: Path
    is_reference: bool
    description: str

    def tokenizer(self):
        from bertlab.finetune import load_tokenizer_for
        return load_tokenizer_for(self.folder)


def pretrained_encoder(prefer_reference: bool = True) -> PretrainedEncoder:
    """The book's own pre-trained model when the reference run is recorded, else the stand-in,
    all-MiniLM-L6-v2 (a real 6-layer BERT encoder, H=384, A=12, distilled rather than pre-trained
    with the masked LM; see chapter 11). `folder` works as `finetune(init=...)`."""
    run = find() if prefer_reference else None
    if run is not None and not run.smoke:
        c = run.config()
        return PretrainedEncoder(
            "bertlab reference", run.model_folder(), True,
            f"the book's own BERT (L={c.num_layers}, H={c.hidden_size}, A={c.num_heads}, "
            f"vocabulary {c.vocab_size:,}), {run.label()}")
    from bertlab.notebook import minilm_path
    return PretrainedEncoder(
        "all-MiniLM-L6-v2", Path(minilm_path()), False,
        "all-MiniLM-L6-v2, a stand-in until the book's own reference run is recorded: a 6-layer BERT "
        "encoder (H=384, A=12, bert-base-uncased vocabulary) distilled from a larger model, not "
        "pre-trained with the masked LM")
