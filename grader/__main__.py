"""`python -m grader <folder>`: grade submitted exercise notebooks (grader.grading)."""

from grader.grading import main

main()
