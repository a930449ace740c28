"""Inverse document frequency of token ids over a set of reference texts (bert_score's formula).

weight(t) = log((M + 1) / (df(t) + 1)), with M the number of documents and df(t) the number
of documents containing t at least once; a token seen in no document gets log(M + 1).
Which documents count is the caller's choice: in a run, the embedding scorer's corpus pre-pass
counts the unique reference spans of the whole run per context setting (`DocumentFrequencies`,
streamed part by part), so the weights never depend on how the work was cut; `score_texts`
(the bert_score-like API) uses the references of the call, as bert_score does.
"""
from __future__ import annotations

import hashlib
import math
from collections import Counter
from typing import Iterable


class DocumentFrequencies:
    """df counts over documents added one at a time; a document seen before (same key) counts once."""

    def __init__(self) -> None:
        self.counts: Counter[int] = Counter()
        self.n_docs = 0
        self._seen: set[bytes] = set()

    def add(self, key: str, token_ids: Iterable[int]) -> None:
        digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        if digest in self._seen:
            return
        self._seen.add(digest)
        self.counts.update(set(token_ids))
        self.n_docs += 1

    def to_json(self) -> dict[str, object]:
        """JSON-ready, canonical (sorted token ids), so its hash is stable."""
        return {"n_docs": self.n_docs, "df": {str(t): c for t, c in sorted(self.counts.items())}}


class IdfTable:
    """Token id -> idf weight for a fixed document collection."""

    def __init__(self, documents: Iterable[Iterable[int]]):
        counts: Counter[int] = Counter()
        n_docs = 0
        for doc in documents:
            counts.update(set(doc))
            n_docs += 1
        self._set(counts, n_docs)

    @classmethod
    def from_counts(cls, stored: dict[str, object]) -> "IdfTable":
        """From `DocumentFrequencies.to_json()` output (a corpus pre-pass result)."""
        table = cls.__new__(cls)
        df = stored["df"]
        assert isinstance(df, dict)
        table._set(Counter({int(t): int(c) for t, c in df.items()}), int(stored["n_docs"]))  # type: ignore[arg-type]
        return table

    def _set(self, counts: Counter[int], n_docs: int) -> None:
        self.n_docs = n_docs
        self._unseen = math.log(n_docs + 1)
        self._weights = {token: math.log((n_docs + 1) / (df + 1)) for token, df in counts.items()}

    def weight(self, token_id: int) -> float:
        return self._weights.get(token_id, self._unseen)

    def weights(self, token_ids: Iterable[int]) -> list[float]:
        get, unseen = self._weights.get, self._unseen
        return [get(t, unseen) for t in token_ids]
