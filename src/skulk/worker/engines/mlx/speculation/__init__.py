"""Speculative decoding inside the generation loop: the accept rules, the adaptive draft
length, the fixed-shape vectors ranks exchange each round, and the per-row bookkeeping."""
