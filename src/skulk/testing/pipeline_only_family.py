"""A model family that splits by layers only, registered for one test: every family Skulk
ships splits by heads too, and placement's refusal of a head split is still tested."""

from types import MappingProxyType

import pytest

from skulk.model_families import registry
from skulk.model_families.family import PIPELINE_ONLY, ModelFamily
from skulk.model_families.quirks import PLAIN

PIPELINE_ONLY_TYPE = "layers_only"
"""The `model_type` of the family `register_pipeline_only_family` adds."""


def register_pipeline_only_family(monkeypatch: pytest.MonkeyPatch) -> str:
    """Add a pipeline-only family beside the real ones for this test; its model_type."""
    found = dict(registry.families())
    found[PIPELINE_ONLY_TYPE] = ModelFamily(model_type=PIPELINE_ONLY_TYPE,
                                            splits=PIPELINE_ONLY, quirks=PLAIN,
                                            tiny_config={})
    monkeypatch.setattr(registry, "families", lambda: MappingProxyType(found))
    return PIPELINE_ONLY_TYPE
