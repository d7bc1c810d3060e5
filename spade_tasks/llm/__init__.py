"""Model backends: one generation interface for every role."""
