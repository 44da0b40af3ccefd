"""The MLX engine: mlx-lm models, whole or split across the ranks of a ring."""
