"""Prefect flows: the `spade` generation flow (deployment `generation`)."""
