"""labsupport: the support package of the Kubernetes Services lab series.

`Lab` is the one object a notebook uses; `Invalid` and `NotFound` are the API server's refusals.
"""
from labsupport.errors import (AlreadyExists, APIError, BackendUnavailable, Conflict, Invalid, LabError,
                               NotFound)

__all__ = ["Lab", "Invalid", "NotFound", "AlreadyExists", "Conflict", "APIError", "LabError",
           "BackendUnavailable"]
__version__ = "0.1.0"


def __getattr__(name):
    if name == "Lab":
        from labsupport.lab import Lab
        return Lab
    raise AttributeError(f"module 'labsupport' has no attribute {name!r}")
