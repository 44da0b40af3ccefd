"""The echo engine: a weightless test double for the runner path, registered for tests
through `$SKULK_EXTRA_ENGINES` (see `use_test_engines`), never by the product."""
