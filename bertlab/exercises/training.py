"""The checks of assignment 06_training: check_pretraining_step (chapter 10), check_finetune_loop
(chapter 11).

The student's functions train a model the check builds; `observe_student` records what the
check sees (losses, parameters, gradients, learning rates, modes), and bertlab's own step judges it.
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Callable, Sequence

import torch

from bertlab.data.masking import mask_tokens
from bertlab.model import IGNORE_INDEX, BertConfig, BertForPreTraining, BertForSequenceClassification
from bertlab.training.optim import adamw, optimizer_step

from .framework import (
    ExerciseFailure,
    Parts,
    attempt,
    bert_tokenizer,
    call_student,
    gradients_of,
    observe_student,
    outcome,
    parameters_of,
    sentence_documents,
)


@functools.lru_cache(maxsize=1)
def _pretraining_batches() -> tuple[dict[str, torch.Tensor], ...]:
    """Two batches of 8 real sentence pairs (consecutive SQuAD sentences), masked as in BERT."""
    tok = bert_tokenizer()
    sents = [s for d in sentence_documents()[:6] for s in d]
    g = torch.Generator().manual_seed(11)
    special = sorted(set(tok.special_ids))
    random_ids = torch.tensor(sorted(set(range(1000, tok.vocab_size)) - set(special)))
    batches = []
    for b in range(2):
        a_s = sents[16 * b : 16 * b + 16 : 2]
        b_s = sents[16 * b + 1 : 16 * b + 17 : 2]
        enc = tok.encode_batch(a_s, b_s, max_length=48, truncation=True, padding="longest", return_tensors="pt")
        m = mask_tokens(
            enc.input_ids,
            mask_id=tok.mask_id,
            special_ids=special,
            random_ids=random_ids,
            max_predictions=enc.input_ids.shape[1],
            generator=g,
        )
        batches.append(
            {
                "input_ids": m.input_ids,
                "token_type_ids": enc.token_type_ids,
                "attention_mask": enc.attention_mask,
                "mlm_labels": torch.where(m.selected, enc.input_ids, IGNORE_INDEX),
                "nsp_labels": torch.randint(0, 2, (len(a_s),), generator=g),
            }
        )
    return tuple(batches)


def _tiny(model_class, seed: int, dropout: float = 0.0):
    """A seeded 2-layer model of `model_class`, H = 64."""
    torch.manual_seed(seed)
    return model_class(
        BertConfig(num_layers=2, hidden_size=64, num_heads=2, hidden_dropout=dropout, attention_dropout=dropout)
    )


NO_SCALER = torch.amp.GradScaler("cpu", enabled=False)  # fp32: optimizer_step's loss scaling off


def _reference_pretraining_step(model, batch, optimizer, max_grad_norm, variant: str = "") -> float:
    out = model(**batch)  # input_ids, token_type_ids, attention_mask, mlm_labels, nsp_labels
    out.loss.backward()
    if variant == "clip_value":
        torch.nn.utils.clip_grad_value_(model.parameters(), max_grad_norm)
    clip = None if variant in ("no_clip", "clip_value") else max_grad_norm
    optimizer_step(optimizer, NO_SCALER, lr=optimizer.param_groups[0]["lr"], grad_clip=clip)
    return float(out.loss.detach())


def _after_step(base, batch, make_optimizer: Callable, max_grad_norm: float, variant: str = "") -> dict:
    """The parameters after bertlab's step (made with the `variant` mistake) on a copy of `base`."""
    model = copy.deepcopy(base)
    _reference_pretraining_step(model, batch, make_optimizer(model), max_grad_norm, variant)
    return parameters_of(model)


NOT_CLIPPED = (
    "the gradients were not clipped: call torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm) "
    "between backward() and step()"
)


def _params_differ(
    name: str,
    mine: Any,
    ref: dict[str, torch.Tensor],
    what: str,
    hints: Sequence[tuple[Callable[[], dict[str, torch.Tensor]], str]] = (),
    atol: float = 1e-5,
):
    """Fail when a parameter in `mine` (parameters by name, as recorded) differs from `ref`'s;
    hints: (a function that returns the parameters a known mistake gives, why), called only when
    the parameters differ."""

    def same(a: Any, b: torch.Tensor) -> bool:
        return (
            isinstance(a, torch.Tensor)
            and a.shape == b.shape
            and torch.allclose(a.detach().double(), b.detach().double(), atol=atol, rtol=1e-4)
        )

    if not isinstance(mine, dict):
        raise ExerciseFailure(name, f"{what}: the model's parameters were not recorded")
    for pname, q in ref.items():
        p = mine.get(pname)
        if same(p, q):
            continue
        for make, why in hints:
            other = make()
            if all(same(mine.get(n), t) for n, t in other.items()):
                raise ExerciseFailure(name, f"{what}: {why}")
        if not isinstance(p, torch.Tensor) or p.shape != q.shape:
            shape = tuple(p.shape) if isinstance(p, torch.Tensor) else type(p).__name__
            raise ExerciseFailure(
                name, f"{what}: parameter {pname} is {shape}, expected a tensor of shape {tuple(q.shape)}"
            )
        diff = (p.detach().double() - q.detach().double()).abs().max().item()
        raise ExerciseFailure(name, f"{what}: parameter {pname} differs from bertlab's by up to {diff:.3g}")


def _batch_copy(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in batch.items()}


def _adamw_steps(name: str, pretraining_step: Callable, base, batches, lr: float, max_grad_norm: float) -> dict:
    """(observe_student's drive) pretraining_step on a copy of `base` with AdamW, once per batch
    while it runs: what it returned, the parameters after each step, the gradients left after the
    first."""
    model = copy.deepcopy(base)
    optimizer = adamw(model, lr=lr)
    seen: dict[str, Any] = {"steps": [], "after": [], "gradients": None}
    for batch in batches:
        step = attempt(name, pretraining_step, model, _batch_copy(batch), optimizer, max_grad_norm)
        seen["steps"].append(step)
        if "raised" in step:
            break
        seen["after"].append(parameters_of(model))
        if seen["gradients"] is None:
            seen["gradients"] = {n: g for n, g in gradients_of(model).items() if g is not None}
    return seen


def _sgd_step(name: str, pretraining_step: Callable, base, batch, lr: float, max_grad_norm: float) -> dict:
    """(observe_student's drive) One pretraining_step on a copy of `base` with plain SGD: the
    parameters after it."""
    model = copy.deepcopy(base)
    call_student(
        name, pretraining_step, model, _batch_copy(batch), torch.optim.SGD(model.parameters(), lr=lr), max_grad_norm
    )
    return parameters_of(model)


def check_pretraining_step(pretraining_step: Callable) -> None:
    """pretraining_step(model, batch, optimizer, max_grad_norm=1.0) -> float: one update of a
    BertForPreTraining on batch (input_ids, token_type_ids, attention_mask, mlm_labels (B, T) with
    -100 where nothing is predicted, nsp_labels (B,)): loss = MLM cross-entropy + NSP
    cross-entropy, backward, clip the global gradient norm, optimizer step, clear the gradients;
    returns the loss before the update."""
    __tracebackhide__ = True
    name = "pretraining_step"
    parts = Parts(name)
    b1, b2 = _pretraining_batches()
    base = _tiny(BertForPreTraining, 11)
    lr = 1e-3
    ref = copy.deepcopy(base)

    adam = functools.partial(adamw, lr=lr)
    ref_opt = adam(ref)
    ref_loss = _reference_pretraining_step(ref, b1, ref_opt, 1.0)
    ref_after = [parameters_of(ref)]
    _reference_pretraining_step(ref, b2, ref_opt, 1.0)
    ref_after.append(parameters_of(ref))
    run = observe_student(
        name,
        pretraining_step,
        {"run": "AdamW steps", "weights": base.state_dict(), "batches": [b1, b2], "lr": lr, "max_grad_norm": 1.0},
        functools.partial(_adamw_steps, name, pretraining_step, base, (b1, b2), lr, 1.0),
    )
    steps, after = run["steps"], run["after"]
    with parts("returns the loss: MLM cross-entropy over the selected tokens + NSP cross-entropy"):
        got = outcome(name, steps[0])
        try:
            got_f = float(got)
        except (TypeError, ValueError):
            parts.fail(f"return the loss as a float (loss.item()), got {type(got).__name__}")
        if abs(got_f - ref_loss) > 1e-4 * max(1.0, abs(ref_loss)):
            with torch.no_grad():
                out = base(**b1)
            why = ""
            if abs(float(out.mlm_loss) - got_f) < 1e-4:
                why = ": it equals the MLM loss alone: add the NSP loss"
            if abs(float(out.nsp_loss) - got_f) < 1e-4:
                why = ": it equals the NSP loss alone: add the MLM loss"
            parts.fail(
                f"the loss on the first batch: expected {ref_loss:.5f}, got {got_f:.5f}{why} (the MLM loss "
                "is the mean cross-entropy over positions whose label is not -100)"
            )
    with parts("the parameters after one AdamW step equal bertlab's training step"):
        if not after:
            parts.fail("not checked: pretraining_step did not run")
        hints = [(functools.partial(_after_step, base, b1, adam, 1.0, "no_clip"), NOT_CLIPPED)]
        _params_differ(name, after[0], ref_after[0], "after one step on the first batch", hints)
    with parts("the gradients are cleared after the step"):
        if not after:
            parts.fail("not checked: pretraining_step did not run")
        left = [
            n for n, gr in (run["gradients"] or {}).items() if not isinstance(gr, torch.Tensor) or gr.abs().sum() > 0
        ]
        if left:
            parts.fail(
                f"after the step, {len(left)} parameters still hold gradients (e.g. {left[0]}): call "
                "optimizer.zero_grad() after optimizer.step(), or the next step adds to them"
            )
    with parts("a second step, on another batch, equals bertlab's too"):
        if not after:
            parts.fail("not checked: pretraining_step did not run")
        outcome(name, steps[1])
        _params_differ(name, after[1], ref_after[1], "after a second step")
    with parts("the global gradient norm is clipped to max_grad_norm (seen with SGD)"):
        max_norm, sgd_lr = 0.05, 0.5

        def sgd(model):
            return torch.optim.SGD(model.parameters(), lr=sgd_lr)

        expected = _after_step(base, b1, sgd, max_norm)
        sgd_mine = observe_student(
            name,
            pretraining_step,
            {"run": "SGD step", "weights": base.state_dict(), "batch": b1, "lr": sgd_lr, "max_grad_norm": max_norm},
            functools.partial(_sgd_step, name, pretraining_step, base, b1, sgd_lr, max_norm),
        )
        hints = [
            (functools.partial(_after_step, base, b1, sgd, max_norm, "no_clip"), NOT_CLIPPED),
            (
                functools.partial(_after_step, base, b1, sgd, max_norm, "clip_value"),
                "each gradient entry was clipped to +-max_grad_norm (clip_grad_value_); "
                "BERT clips the global NORM of all gradients (clip_grad_norm_)",
            ),
        ]
        _params_differ(name, sgd_mine, expected, f"one SGD step with max_grad_norm={max_norm}", hints)
    parts.done(
        "the loss, the parameters after one and two AdamW steps (bertlab.training.optim.optimizer_step) and "
        "after an SGD step with clipping, on real masked sentence pairs; gradients cleared"
    )


@functools.lru_cache(maxsize=1)
def _sst2_batches() -> tuple[tuple[dict[str, torch.Tensor], ...], tuple[dict[str, torch.Tensor], ...]]:
    """Six training batches of 8 real SST-2 sentences, and four dev batches of 16."""
    # local: keeps `import bertlab.exercises` light (each notebook's first cell)
    from bertlab.tasks import get_task

    task = get_task("sst2")
    tok = bert_tokenizer()

    def batches(examples, size):
        out = []
        for i in range(0, len(examples), size):
            chunk = examples[i : i + size]
            enc = tok.encode_batch(
                [e.sentence for e in chunk], max_length=40, truncation=True, padding="longest", return_tensors="pt"
            )
            out.append({**enc.model_inputs(), "labels": torch.tensor([e.label for e in chunk])})
        return tuple(out)

    return batches(task.load("train")[:48], 8), batches(task.load("dev")[:64], 16)


def _lr_schedule(peak: float, total: int, warmup: int) -> Callable[[int], float]:
    def lr_at(step: int) -> float:
        if step < warmup:
            return peak * (step + 1) / warmup
        return peak * max(0.0, (total - step) / max(1, total - warmup))

    return lr_at


def _reference_finetune(model, batches, optimizer, epochs, lr_at, max_grad_norm=1.0, variant=""):
    model.train()
    losses, step = [], 0
    for _ in range(epochs):
        for batch in batches:
            out = model(**batch)  # input_ids, token_type_ids, attention_mask, labels
            out.loss.backward()
            lr = optimizer.defaults["lr"] if variant == "constant" else lr_at(step)
            optimizer_step(optimizer, NO_SCALER, lr=lr, grad_clip=None if variant == "no_clip" else max_grad_norm)
            losses.append(out.loss.item())
            step += 1
    return losses


def _finetuned(base, batches, peak: float, epochs: int, lr_at, variant: str) -> dict:
    """The parameters after bertlab's loop (made with the `variant` mistake) on a copy of `base`."""
    model = copy.deepcopy(base)
    _reference_finetune(model, batches, adamw(model, lr=peak), epochs, lr_at, variant=variant)
    return parameters_of(model)


def _reference_accuracy(model, batches) -> float:
    model.eval()
    right = total = 0
    with torch.no_grad():
        for b in batches:
            logits = model(b["input_ids"], b["token_type_ids"], b["attention_mask"]).logits
            right += int((logits.argmax(-1) == b["labels"]).sum())
            total += len(b["labels"])
    return right / total


def _training_run(name: str, finetune: Callable, base, batches, peak: float, epochs: int, lr_at) -> dict:
    """(observe_student's drive) finetune on a copy of `base` with AdamW: what it returned, the
    learning rate of each optimizer step, the parameters after it."""
    model = copy.deepcopy(base)
    optimizer = adamw(model, lr=peak)
    lrs: list[float] = []
    step = optimizer.step

    def recording_step(*args, **kwargs):
        lrs.append(optimizer.param_groups[0]["lr"])
        return step(*args, **kwargs)

    optimizer.step = recording_step
    losses = attempt(name, finetune, model, [_batch_copy(b) for b in batches], optimizer, epochs, lr_at, 1.0)
    return {"losses": losses, "lrs": lrs, "after": parameters_of(model)}


def _forward_modes(name: str, fn: Callable, model, batches, *args) -> dict:
    """(observe_student's drive) fn(model, batches, *args): what it returned, and (train mode,
    grad mode) at each forward pass of `model`."""
    modes: list[tuple[bool, bool]] = []
    handle = model.register_forward_pre_hook(lambda mod, _: modes.append((mod.training, torch.is_grad_enabled())))
    try:
        result = call_student(name, fn, model, [_batch_copy(b) for b in batches], *args)
    finally:
        handle.remove()
    return {"result": result, "forward_passes": modes}


def check_finetune_loop(finetune: Callable, accuracy: Callable) -> None:
    """finetune(model, batches, optimizer, epochs, lr_at, max_grad_norm=1.0) -> list of the losses
    of every step: the model in train mode; for each epoch, each batch: loss, backward, clip, set
    every param group's lr to lr_at(step) (step = 0, 1, ... over all epochs), step, zero_grad.
    accuracy(model, batches) -> float in [0, 1]: eval mode, no gradients, argmax of the logits."""
    __tracebackhide__ = True
    name = "finetune_loop"
    parts = Parts(name)
    train, dev = _sst2_batches()
    epochs, peak, warmup = 2, 2e-3, 2
    total = epochs * len(train)
    lr_at = _lr_schedule(peak, total, warmup)
    schedule = {"peak": peak, "total": total, "warmup": warmup}  # what lr_at is, as data
    base = _tiny(BertForSequenceClassification, 12)
    ref = copy.deepcopy(base)
    ref_losses = _reference_finetune(ref, train, adamw(ref, lr=peak), epochs, lr_at)
    run = observe_student(
        name,
        finetune,
        {
            "run": "training",
            "weights": base.state_dict(),
            "batches": train,
            "epochs": epochs,
            "lr_at": schedule,
            "max_grad_norm": 1.0,
        },
        functools.partial(_training_run, name, finetune, base, train, peak, epochs, lr_at),
    )
    seen_lrs = run["lrs"]
    with parts("the learning rate of step s is lr_at(s)"):
        outcome(name, run["losses"])
        want = [lr_at(s) for s in range(total)]
        if len(seen_lrs) != total:
            parts.fail(f"optimizer.step() was called {len(seen_lrs)} times for {total} batches; once per batch")
        for s, (a, b) in enumerate(zip(seen_lrs, want)):
            if abs(a - b) > 1e-12:
                off = (
                    " (that is lr_at(s + 1): count steps from 0)"
                    if s + 1 < total and abs(a - lr_at(s + 1)) < 1e-12
                    else ""
                )
                parts.fail(
                    f"step {s} ran with lr {a:.3g}, expected lr_at({s}) = {b:.3g}{off}: set "
                    "g['lr'] = lr_at(step) for every g in optimizer.param_groups before optimizer.step()"
                )
    with parts("returns one loss per step, equal to bertlab's loop"):
        if "raised" in run["losses"]:
            parts.fail("not checked: finetune did not run")
        got = run["losses"]["result"]
        if not isinstance(got, (list, tuple)) or len(got) != total:
            parts.fail(
                f"{epochs} epochs of {len(train)} batches: return a list of {total} losses (one per step), "
                f"got {type(got).__name__}" + (f" of length {len(got)}" if hasattr(got, "__len__") else "")
            )
        got_f = [float(x) for x in got]
        for s, (a, b) in enumerate(zip(got_f, ref_losses)):
            if abs(a - b) > 1e-4 * max(1.0, abs(b)):
                parts.fail(
                    f"step {s}: loss {a:.5f}, expected {b:.5f} (the loss of the batch BEFORE that step's update)"
                )
    with parts("the weights after training equal bertlab's loop (clipping included)"):
        if "raised" in run["losses"]:
            parts.fail("not checked: finetune did not run")
        variant = functools.partial(_finetuned, base, train, peak, epochs, lr_at)
        hints = [
            (functools.partial(variant, "no_clip"), "the gradients were not clipped to max_grad_norm"),
            (functools.partial(variant, "constant"), "the learning rate stayed at the optimizer's initial value"),
        ]
        _params_differ(name, run["after"], parameters_of(ref), f"after {epochs} epochs", hints, atol=1e-4)
    with parts("the model trains in train mode (dropout on)"):
        m = _tiny(BertForSequenceClassification, 12, dropout=0.1).eval()
        modes = observe_student(
            name,
            finetune,
            {"run": "modes", "weights": m.state_dict(), "batches": train[:2], "epochs": 1, "lr_at": schedule},
            functools.partial(_forward_modes, name, finetune, m, train[:2], adamw(m, lr=peak), 1, lr_at, 1.0),
        )["forward_passes"]
        if not modes or not all(t for t, _ in modes):
            parts.fail("the model was in eval mode while training: call model.train() at the start of finetune")
    with parts("accuracy: eval mode, no gradients, the share of correct argmax predictions"):
        m = _tiny(BertForSequenceClassification, 13, dropout=0.3).train()
        expected = _reference_accuracy(copy.deepcopy(m), dev)
        seen = observe_student(
            name,
            accuracy,
            {"run": "accuracy", "weights": m.state_dict(), "batches": dev},
            functools.partial(_forward_modes, name, accuracy, m, dev),
        )
        acc, state = seen["result"], seen["forward_passes"]
        if any(t for t, _ in state):
            parts.fail("accuracy ran the model in train mode (dropout on): call model.eval() first")
        if any(g for _, g in state):
            parts.fail("accuracy computed gradients: wrap the forward passes in torch.no_grad()")
        try:
            acc_f = float(acc)
        except (TypeError, ValueError):
            parts.fail(f"accuracy: return a float, got {type(acc).__name__}")
        if acc_f > 1.0 and abs(acc_f / 100 - expected) < 1e-6:
            parts.fail(f"accuracy returned {acc_f:g}, a percentage: return a share in [0, 1]")
        if abs(acc_f - expected) > 1e-6:
            parts.fail(
                f"accuracy on {sum(len(b['labels']) for b in dev)} SST-2 dev sentences: expected "
                f"{expected:.4f}, got {acc_f:.4f}"
            )
    parts.done(
        f"{epochs} epochs of {len(train)} real SST-2 batches against bertlab's update step (losses, learning rates, "
        "final weights), train mode while training; accuracy in eval mode without gradients"
    )
