"""The course around the book: its assignments, their exercises, open questions and project, with
the points, difficulty, expected student time and hardware of each.

This one table feeds the grader (grader.grading, beside it), the tables at the top of the exercise
notebooks and the instructor page (tests check that they agree with it), and the student edition. It is
instructors' data, so it lives in grader/ at the top of a checkout, not in the package students install;
it imports nothing from the grader, which imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

DIFFICULTIES = ("easy", "medium", "hard")


def check_difficulty(name: str, difficulty: str) -> None:
    """An exercise's or project's difficulty must be one of DIFFICULTIES."""
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"{name}: difficulty must be one of {DIFFICULTIES}, got {difficulty!r}")


@dataclass(frozen=True)
class Exercise:
    """One checked exercise. `name` is its check (bertlab.exercises.check(name, *functions))."""

    number: int
    name: str
    title: str
    functions: tuple[str, ...]  # the functions (or classes) the student writes, in check order
    notebook: str  # the assignment: book/exercises/<notebook>.ipynb
    chapters: tuple[str, ...]  # the chapters it follows (book/<chapter>.ipynb)
    points: int
    difficulty: str
    minutes: tuple[int, int]  # expected student time, from .. to
    device: str = "CPU"
    timeout: int = 120  # seconds the grader allows its check, a fresh kernel's data loading included
    memory_mb: int = 2048  # memory the grader lets its check allocate beyond what the kernel holds

    def __post_init__(self):
        check_difficulty(self.name, self.difficulty)

    @property
    def time(self) -> str:
        lo, hi = self.minutes
        return f"{lo}-{hi} min"


@dataclass(frozen=True)
class Question:
    """An open question, graded by hand; `id` is the nbgrader grade_id of its answer cell."""

    id: str
    notebook: str
    title: str
    points: int


@dataclass(frozen=True)
class Project:
    """A project graded by measuring what it hands in again (`grader` is the command)."""

    name: str
    title: str
    notebook: str
    chapters: tuple[str, ...]
    points: int  # the measured points (the write-up is a Question of the same notebook)
    difficulty: str
    minutes: tuple[int, int]  # expected student time, from .. to
    compute: str  # what it runs, where, for how long
    grader: str
    device: str = "CPU"
    timeout: int = 1800  # seconds the grader allows the measurements of one submission

    def __post_init__(self):
        check_difficulty(self.name, self.difficulty)

    @property
    def time(self) -> str:
        lo, hi = self.minutes
        return f"{lo / 60:g}-{hi / 60:g} h"


# Each exercise on two lines: number, check name, title, the functions the student writes (in check
# order); its assignment (book/exercises/), the chapters it follows, points, difficulty, minutes.
_E = Exercise
# fmt: off
EXERCISES: dict[str, Exercise] = {e.name: e for e in [
    _E(1, "wordpiece", "WordPiece, greedy longest-match-first", ("wordpiece",),
       "01_tokens_and_positions", ("02_wordpiece",), 10, "medium", (30, 45)),
    _E(2, "sinusoids", "Sinusoidal position encodings", ("sinusoidal_positions",),
       "01_tokens_and_positions", ("03_embeddings",), 5, "easy", (20, 30)),
    _E(3, "attention", "Scaled dot-product attention with a padding mask", ("attention",),
       "02_attention", ("04_self_attention",), 10, "medium", (30, 45)),
    _E(4, "heads", "Splitting and merging heads", ("split_heads", "merge_heads"),
       "02_attention", ("05_multi_head",), 5, "easy", (20, 30)),
    _E(5, "masking", "MLM masking: 15% and 80/10/10", ("mask_batch",),
       "03_pretraining_data", ("08_masked_lm",), 15, "hard", (45, 60)),
    _E(6, "nsp", "Next-sentence pairs from documents", ("make_nsp_pairs",),
       "03_pretraining_data", ("09_next_sentence",), 10, "medium", (30, 45)),
    _E(7, "span", "SQuAD answer-span decoding", ("best_span",),
       "04_using_bert", ("13_question_answering",), 10, "medium", (30, 45)),
    _E(8, "features", "The feature-based layer combinations", ("combine_layers",),
       "04_using_bert", ("15_features",), 5, "easy", (20, 30)),
    _E(9, "encoder_layer", "A post-LN encoder layer", ("EncoderLayer",),
       "05_encoder_layer", ("06_encoder_block",), 15, "hard", (45, 75)),
    _E(10, "param_count", "BERT's parameter count in closed form", ("bert_parameters",),
       "05_encoder_layer", ("07_whole_model",), 10, "medium", (30, 45)),
    _E(11, "pretraining_step", "One pretraining step", ("pretraining_step",),
       "06_training", ("10_pretraining",), 10, "medium", (30, 45)),
    _E(12, "finetune_loop", "A fine-tuning loop and its evaluation", ("finetune", "accuracy"),
       "06_training", ("11_finetuning_sst2",), 15, "medium", (45, 60)),
    _E(13, "ner_labels", "NER: word labels onto word pieces and back", ("align_labels", "word_predictions"),
       "07_tasks_and_heads", ("14_named_entities",), 10, "easy", (20, 40)),
    _E(14, "head_probe", "A head probe: find heads by measurement", ("head_scores", "best_head"),
       "07_tasks_and_heads", ("16_attention_heads",), 15, "medium", (45, 60)),
    _E(15, "ablation_plan", "Designing an ablation", ("ablation_plan",),
       "08_ablation", ("17_ablations",), 10, "medium", (45, 75)),
]}
# fmt: on

_Q = Question
# fmt: off
QUESTIONS: dict[str, Question] = {q.id: q for q in [
    _Q("q_unk",          "01_tokens_and_positions", "Why WordPiece never fails on known characters", 5),
    _Q("q_positions",    "01_tokens_and_positions", "What sinusoids give that a learned table does not", 5),
    _Q("q_sqrt",         "02_attention",            "Why divide by sqrt(d_k)?", 5),
    _Q("q_mask",         "02_attention",            "Why mask keys and not queries?", 5),
    _Q("q_801010",       "03_pretraining_data",     "Why 80/10/10 rather than always [MASK]?", 5),
    _Q("q_nsp",          "03_pretraining_data",     "Why did RoBERTa drop NSP?", 5),
    _Q("q_span",         "04_using_bert",           "Why j >= i is not enough", 5),
    _Q("q_features",     "04_using_bert",           "Why features stay close to fine-tuning", 5),
    _Q("q_postln",       "05_encoder_layer",        "Post-LN or pre-LN?", 5),
    _Q("q_where_params", "05_encoder_layer",        "Where do BERT-base's parameters sit?", 5),
    _Q("q_clip",         "06_training",             "What clipping and warm-up protect against", 5),
    _Q("q_control",      "06_training",             "Why a from-scratch control?", 5),
    _Q("q_first_piece",  "07_tasks_and_heads",      "First piece, or every piece?", 5),
    _Q("q_probe_limits", "07_tasks_and_heads",      "What a head probe can and cannot show", 5),
    _Q("q_confounds",    "08_ablation",             "What else could differ between the arms", 5),
    _Q("q_read_result",  "08_ablation",             "Reading an ablation's result", 10),
    _Q("q_capstone",     "09_capstone",             "What you changed and what it bought", 25),
]}
# fmt: on

# fmt: off
PROJECTS: dict[str, Project] = {p.name: p for p in [
    Project("capstone", "Your own BERT: pretrain, fine-tune, beat the control", "09_capstone",
            ("10_pretraining", "14_named_entities", "17_ablations"), 50, "hard", (240, 360),
            "CPU, under 30 min: 8-15 min of pretraining, about 10 min of fine-tuning",
            "python -m bertlab.course.capstone SUBMISSION"),
]}
# fmt: on

ASSIGNMENTS: dict[str, str] = {
    "01_tokens_and_positions": "Tokens and positions",
    "02_attention": "Attention and heads",
    "03_pretraining_data": "Pretraining data",
    "04_using_bert": "Using BERT's outputs",
    "05_encoder_layer": "The encoder layer and its size",
    "06_training": "Pretraining and fine-tuning steps",
    "07_tasks_and_heads": "Token labels and attention heads",
    "08_ablation": "Designing an ablation",
    "09_capstone": "Capstone: your own BERT",
}


def _of(notebook: str, table: dict) -> list:
    if notebook not in ASSIGNMENTS:
        raise ValueError(f"unknown assignment {notebook!r}; the assignments are: {', '.join(ASSIGNMENTS)}")
    return [x for x in table.values() if x.notebook == notebook]


def exercises_of(notebook: str) -> list[Exercise]:
    """The exercises of one assignment, in order."""
    return sorted(_of(notebook, EXERCISES), key=lambda e: e.number)


def questions_of(notebook: str) -> list[Question]:
    return _of(notebook, QUESTIONS)


def projects_of(notebook: str) -> list[Project]:
    return _of(notebook, PROJECTS)


def metadata_table(notebook: str) -> str:
    """The markdown table at the top of an exercise notebook (tests check the notebook has it)."""
    rows = ["| Exercise | Check | Difficulty | Points | Expected time | Runs on |", "|---|---|---|---|---|---|"]
    for e in exercises_of(notebook):
        rows.append(f"| {e.number}. {e.title} | `{e.name}` | {e.difficulty} | {e.points} | {e.time} | {e.device} |")
    for p in projects_of(notebook):
        rows.append(
            f"| {p.title} | measured again from the weights | {p.difficulty} | {p.points} | {p.time} | {p.device} |"
        )
    for q in questions_of(notebook):
        rows.append(f"| Question: {q.title} | graded by hand | | {q.points} | | |")
    return "\n".join(rows)
