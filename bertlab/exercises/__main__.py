"""`python -m bertlab.exercises grade <folder>`: grade submitted notebooks (bertlab.course.grading)."""

from bertlab.exercises import main

main()
