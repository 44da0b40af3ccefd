import numpy as np

from skulk.shared.types.chunks import TokenChunk
from skulk.shared.types.ids import ModelId
from skulk.shared.types.tasks import GenerationParams
from skulk.worker.engines.mlx.conftest import EngineFactory
from skulk.worker.engines.mlx.engine_test import chunks_in, done, run_batch


def test_a_whole_model_embeds_mean_pooled_unit_vectors(make_engine: EngineFactory) -> None:
    engine = make_engine()
    vectors, tokens = engine.embed(["hello there", "the quick brown fox", "hello there"])
    assert len(vectors) == 3 and tokens > 6
    array = np.array(vectors)
    assert array.shape[1] == 64  # the tiny model's hidden size
    assert np.allclose(np.linalg.norm(array, axis=1), 1.0, atol=1e-5)
    assert np.allclose(array[0], array[2]) and not np.allclose(array[0], array[1])


def test_an_embedding_request_is_answered_beside_generation(make_engine: EngineFactory) -> None:
    engine = make_engine()
    asked = GenerationParams(model_id=ModelId("tiny"), messages=[], embed=["a", "b"])
    events = run_batch(engine, {"e": asked})
    [chunk] = chunks_in(events["e"])
    assert isinstance(chunk, TokenChunk) and chunk.embeddings is not None
    assert len(chunk.embeddings) == 2 and done(events["e"]).status == "complete"

    # (A split embeds too, every rank in step: split_embeddings_test.py.)
