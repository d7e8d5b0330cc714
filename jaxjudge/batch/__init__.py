"""Grading whole folders of submissions (a class, a Gradescope autograder) with resume."""
