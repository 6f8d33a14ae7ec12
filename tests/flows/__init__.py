"""Tests of the Prefect flows on a small fixture DAG."""
