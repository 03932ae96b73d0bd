"""A bi-encoder of the example plugin: no model, each text's words hashed into 512
dimensions (the hashing trick), so a dense index holds a lexical view of the corpus."""
import zlib

import numpy as np

from engine.api import EncoderSpec, query_terms


class HashedWords:
    """sentence-transformers' encoding interface, which every bi_encoder option uses."""
    def __init__(self, dim: int = 512) -> None:
        self.dim = dim

    def get_embedding_dimension(self) -> int:
        return self.dim

    def encode_document(self, texts, **_options) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in query_terms(text):
                vectors[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        return vectors

    encode_query = encode_document


HASHED_WORDS = EncoderSpec("hashed-words", "each text's words hashed into 512 dimensions "
                           "(no model)", lambda precision: HashedWords())
