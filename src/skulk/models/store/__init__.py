"""The node's model store: weights pulled from the hub or added from disk, verified."""
