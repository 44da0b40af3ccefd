"""Model families for the sharded MLX engines, found by name in `registry`."""
