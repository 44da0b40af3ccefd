"""Model families by config.json `model_type`, one module each: how the family splits,
where its model differs around the decoder layers (its quirks), and the config of its tiny
random-weight model for tests. `registry.py` finds every module; nothing here imports mlx
when it loads, so placement reads the families in the node process."""
