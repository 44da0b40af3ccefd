"""The echo engine: a weightless test double for the runner path."""
