"""Miniature reproductions of ICLR 2026 papers, one sub-package per paper.

Importing the package applies the offline switches (``stages.core.env``) so that no
stage, test or flow can reach a model hub by accident.
"""

from stages.core.env import apply_offline_env

apply_offline_env()
