"""The cells of each assignment's source notebook, one module per assignment (see grading/build_source.py)."""
