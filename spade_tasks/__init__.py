"""SPADE: self-play in adaptive synthetic executable environments."""
