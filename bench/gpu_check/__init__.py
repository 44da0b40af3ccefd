"""The GPU check: what travels to a machine with an NVIDIA GPU (`make gpu-bundle`), and
the checks tools/gpu-check.sh runs there (or here with `--cpu-only`). bench/README.md
says how a session lent a device runs it."""
