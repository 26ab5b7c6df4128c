"""A class on one machine: JupyterHub, an instructor and students as real Unix users, nbgrader's exchange."""
