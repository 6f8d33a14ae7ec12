"""Prefect flows over the dvc.yaml DAG.

Importing the package applies the project's Prefect settings (``prefect.toml``, see
``flows.settings``) before any flow module imports Prefect.
"""

from flows.settings import apply_prefect_settings

apply_prefect_settings()
