"""Tools for an instructor grading a class: parallel autograding and the class report."""
