"""Prefect flows: the `spade` generation flow (deployment `generation`) and the
`spade-eval` held-out evaluation flow."""
