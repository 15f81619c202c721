"""The course's measurement: the capstone's grader (capstone.py), which measures a submitted mini-BERT
again from its weights.

The course table (assignments, points, difficulty, student time, the grader's limits) is instructors'
data: it is grader.course, in grader/ beside the package at the top of a checkout (not installed).
"""

from __future__ import annotations

from bertlab.moved import left_message

# The course table's names: importing one from here says where it went instead of "cannot import name".
TABLE_NAMES = frozenset(
    "EXERCISES QUESTIONS PROJECTS ASSIGNMENTS DIFFICULTIES Exercise Question Project exercises_of questions_of "
    "projects_of metadata_table check_difficulty".split()
)


def __getattr__(name: str):
    if name in TABLE_NAMES:
        raise ImportError(left_message(f"{__name__}.{name}", f"grader.course.{name}"), name=__name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
