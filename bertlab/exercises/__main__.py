"""`python -m bertlab.exercises replay ...`: the grader's clean process (grading itself is `python -m grader`)."""

from bertlab.exercises import main

main()
