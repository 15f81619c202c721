"""The package's old import paths, kept working for one term (until the 2027 spring term).

bertlab was one flat folder of modules until it was arranged in folders by layer (data/, tasks/,
training/, analysis/, experiments/, course/). Chapters and exercises already handed out may still
write `from bertlab.pretrain import pretrain` or `from bertlab import reference`: `OldPaths`, put on
`sys.meta_path` when bertlab is imported, answers each old name in `MOVED` with the module at its
new path (the same module object, so patching one patches the other) and warns once, with a
FutureWarning naming the new path, so that readers see it in a notebook. One table here instead
of thirty forwarding files at the top of the package keeps the tree the move was for; removing
the old paths is deleting this table.

Some modules left the package altogether: `LEFT` names them with their new home at the top of a
checkout (the lab, lab/, or the instructors' grader, grader/; neither is installed), and importing one
stops with an ImportError that says where it went and how to import it from there.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings

MOVED = {
    "bertlab.registry": "bertlab.data.registry",
    "bertlab.download": "bertlab.data.download",
    "bertlab.records": "bertlab.data.records",
    "bertlab.task_data": "bertlab.data.task_data",
    "bertlab.corpus": "bertlab.data.corpus",
    "bertlab.tokenizer": "bertlab.data.tokenizer",
    "bertlab.masking": "bertlab.data.masking",
    "bertlab.pretraining_data": "bertlab.data.pretraining_data",
    "bertlab.task_inputs": "bertlab.tasks.inputs",
    "bertlab.squad": "bertlab.tasks.squad",
    "bertlab.ner": "bertlab.tasks.ner",
    "bertlab.metrics": "bertlab.tasks.metrics",
    "bertlab.feature_based": "bertlab.tasks.feature_based",
    "bertlab.pretrain": "bertlab.training.pretrain",
    "bertlab.finetune": "bertlab.training.finetune",
    "bertlab.optim": "bertlab.training.optim",
    "bertlab.recipes": "bertlab.training.recipes",
    "bertlab.logs": "bertlab.training.logs",
    "bertlab.flops": "bertlab.training.flops",
    "bertlab.attention_analysis": "bertlab.analysis.attention",
    "bertlab.pair_attention": "bertlab.analysis.pair_attention",
    "bertlab.fill_mask": "bertlab.analysis.fill_mask",
    "bertlab.viz": "bertlab.analysis.viz",
    "bertlab.reference": "bertlab.experiments.reference",
    "bertlab.capstone": "bertlab.course.capstone",
}

# Modules that left the package for a folder beside bertlab/ in a checkout (not installed).
LEFT = {
    "bertlab.experiments.speed": "lab.speed",
    "bertlab.experiments.finetune_speed": "lab.finetune_speed",
    "bertlab.experiments.rerun": "lab.rerun",
    "bertlab.experiments.time_budget": "lab.time_budget",
    "bertlab.experiments.finetune_rates": "lab.finetune_rates",
    "bertlab.experiments.reference_run": "lab.reference_run",
    "bertlab.experiments.pilots": "lab.pilots",
    "bertlab.experiments.finetune_seeds": "lab.finetune_seeds",
    "bertlab.experiments.ablations": "lab.ablations_reading",
    "bertlab.pilot_study": "lab.pilots",
    "bertlab.ablations": "lab.ablations_reading",
    "bertlab.analysis.linear_probe": "lab.linear_probe",
    "bertlab.probe": "lab.linear_probe",
    "bertlab.course.grading": "grader.grading",
    "bertlab.grading": "grader.grading",
}


def left_message(old: str, new: str | None = None) -> str:
    """What importing `old` (a module of `LEFT`, or a name that left a module for `new`) says: its new
    home and how to import it."""
    new = new or LEFT[old]
    parent, name = new.rsplit(".", 1)
    return (
        f"{old} has left the package: it is {new} now, in {new.split('.')[0]}/ at the top of a checkout of the "
        f"bertlab repository (not installed with bertlab). Run from the repository root (or put it on sys.path) "
        f"and write `from {parent} import {name}`."
    )


class OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `MOVED`'s old names (only after the regular finders found nothing) and loads each as
    its new module; `LEFT`'s names stop with an ImportError naming their new home."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED and fullname not in LEFT:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        return None  # a placeholder module; exec_module replaces it

    def exec_module(self, module) -> None:
        old = module.__name__
        if old in LEFT:
            # a plain ImportError (not ModuleNotFoundError), so that `from bertlab.experiments import
            # speed` shows this message too instead of "cannot import name"
            raise ImportError(left_message(old), name=old)
        new = MOVED[old]
        warnings.warn(
            f"{old} has moved to {new}: import it from there (the old path works until the 2027 spring term)",
            FutureWarning,
            stacklevel=2,
        )
        # the import system returns whatever sys.modules holds under the name once this returns
        sys.modules[old] = importlib.import_module(new)


def install() -> None:
    """Put `OldPaths` at the end of sys.meta_path (once)."""
    if not any(isinstance(f, OldPaths) for f in sys.meta_path):
        sys.meta_path.append(OldPaths())
