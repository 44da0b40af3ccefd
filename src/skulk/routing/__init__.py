"""Routing: typed topics over a byte transport (Zenoh for real, an in-memory bus for tests)."""
