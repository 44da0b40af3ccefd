"""Drafters for speculative decoding: each proposes tokens; the generation loop verifies.

Found by name in `registry`; none of them imports mlx unless it runs a model, so a node
can serve drafts to other nodes without loading an engine.
"""
