"""Prefect 3 flows that run the dvc.yaml DAG (see flows/reproduce.py)."""
