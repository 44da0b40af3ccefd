from pathlib import Path

from skulk.models.catalog import ModelCatalog
from skulk.models.peers.holders_test import TINY, reading
from skulk.models.peers.source import PeerSource
from skulk.node_weights import NodeWeights
from skulk.shared.types.ids import NodeId
from skulk.worker.weight_sources import HubSource


def test_a_missing_model_comes_from_the_members_holding_it_then_from_its_hub_repository(
        tmp_path: Path) -> None:
    catalog = ModelCatalog.builtin(tmp_path)
    qwen = catalog.resolve("qwen2.5-0.5b-instruct")
    assert qwen is not None
    held = TINY.model_copy(update={"model_id": qwen.model_id})
    readings = {NodeId(r.node_id): r for r in
                [reading("self", held=[]), reading("holder", held=[held], addresses=["10.0.0.2"])]}
    weights = NodeWeights(node_id=NodeId("self"), models_dir=tmp_path, tls=None,
                          host="127.0.0.1", revoked=frozenset, readings=lambda: readings)
    sources = weights.sources_for(qwen, "gguf")
    assert [type(s) for s in sources] == [PeerSource, HubSource]
    assert sources[0].label == "peer holder"
    assert sources[1].label.startswith("hub ") and qwen.source_for("gguf") is not None
    unheld = catalog.resolve("smollm2-135m")  # no holder, no hub repository
    assert unheld is not None and weights.sources_for(unheld, "gguf") == []
