"""Inverse document frequency of token ids over a set of reference texts (bert_score's formula).

weight(t) = log((M + 1) / (df(t) + 1)), with M the number of documents and df(t) the number
of documents containing t at least once; a token seen in no document gets log(M + 1).
Which documents count is the caller's choice (the embedding scorer uses the unique reference
spans of one `score()` call, per context setting; see engine/metrics/embedding.py).
"""
from __future__ import annotations

import math
from collections import Counter
from typing import Iterable


class IdfTable:
    """Token id -> idf weight for a fixed document collection."""

    def __init__(self, documents: Iterable[Iterable[int]]):
        counts: Counter[int] = Counter()
        n_docs = 0
        for doc in documents:
            counts.update(set(doc))
            n_docs += 1
        self.n_docs = n_docs
        self._unseen = math.log(n_docs + 1)
        self._weights = {token: math.log((n_docs + 1) / (df + 1)) for token, df in counts.items()}

    def weight(self, token_id: int) -> float:
        return self._weights.get(token_id, self._unseen)

    def weights(self, token_ids: Iterable[int]) -> list[float]:
        get, unseen = self._weights.get, self._unseen
        return [get(t, unseen) for t in token_ids]
