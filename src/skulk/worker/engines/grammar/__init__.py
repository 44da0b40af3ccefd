"""Constrained decoding with llguidance: a request's grammar, its matcher, its token masks."""
