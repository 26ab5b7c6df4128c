"""Grading nobody can fool: a sandboxed kernel, the cluster in a lab server, marks from the grader's own run.

`sandbox` confines the kernel (bubblewrap), `answers` turns a student's variables into plain data in the kernel,
`rerun` runs a test cell again in the grader's process, and `execute` is the nbgrader step that ties them together.
"""
