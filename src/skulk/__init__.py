"""Skulk: run large language models across the machines you already own."""

__version__ = "0.1.0"
