"""The grader of exercise notebooks: an instructors' application beside the book, not in the package.

    python -m grader submissions/ [--timeout S] [--assignment NAME] [--out CSV]

`grader.grading` runs each submitted notebook in a fresh Jupyter kernel, has bertlab's checks
record its answers there (bertlab.exercises.grade_in_kernel) and judges them in a clean process
(bertlab.exercises.replay_check), by the points and limits of the course table, `grader.course`;
book/instructor.md describes it. It is not installed with bertlab (pyproject.toml packages only
bertlab*): run it from the root of a checkout of the bertlab repository, where bertlab is installed
too, with nbclient and a Jupyter kernel. It uses only bertlab's public names, and bertlab never
imports it (tests/test_architecture.py checks both).
"""
