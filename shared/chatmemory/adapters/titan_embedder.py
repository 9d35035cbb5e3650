"""Amazon Titan Text Embeddings V2 on Bedrock: the embedder on AWS."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from chatmemory.domain.errors import InvalidField
from chatmemory.ports.embedder import Embedder, Vectors

TITAN_V2 = "amazon.titan-embed-text-v2:0"
_DIMENSIONS = (256, 512, 1024)  # what Titan V2 can produce
_MAX_CHARS = 50_000  # Titan V2 accepts up to 8k tokens; messages here are far shorter


class TitanEmbedder(Embedder):
    """One InvokeModel call per text (Titan V2 embeds a single input per request).

    `client` is a boto3 `bedrock-runtime` client, injected so tests can stub it.
    """

    def __init__(self, client: Any, *, dimensions: int = 1024, model_id: str = TITAN_V2) -> None:
        if dimensions not in _DIMENSIONS:
            raise InvalidField("dimensions", f"Titan V2 supports {_DIMENSIONS}")
        self._client = client
        self._model_id = model_id
        self.dimensions = dimensions
        self.name = f"titan-v2-{dimensions}"

    def embed(self, texts: Sequence[str]) -> Vectors:
        matrix = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            body = json.dumps(
                {"inputText": text[:_MAX_CHARS], "dimensions": self.dimensions, "normalize": True}
            )
            response = self._client.invoke_model(
                modelId=self._model_id,
                body=body,
                contentType="application/json",
                accept="application/json",
            )
            payload = json.loads(response["body"].read())
            vector = np.asarray(payload["embedding"], dtype=np.float32)
            if vector.shape != (self.dimensions,):
                raise ValueError(f"Titan returned {vector.shape[0]} dimensions")
            norm = float(np.linalg.norm(vector))
            matrix[row] = vector / norm if norm > 0 else vector
        return matrix
