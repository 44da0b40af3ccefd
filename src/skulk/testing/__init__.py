"""Test support shared by the unit tests beside the code, tests/ and bench/: builders of
valid values, tiny models, ports, routers and supervised runners. Production code never
imports it."""
