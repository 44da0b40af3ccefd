"""Drafters for speculative decoding: each proposes tokens; the generation loop verifies.

Found by name in `registry`; none of them imports mlx unless it runs a model. The n-gram
index also serves other nodes' runners from every node (`worker/draft_service.py`).
"""
