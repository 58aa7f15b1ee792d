"""
The `hybrid=` option of a `DuplicateIndex` (keyword + dense search), checked, and how it is written into and read
from `index_config.json` (a reopened index searches the same way). Off (`None`) unless asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hfsiamese.search.lexical.fusion import DEFAULT_LEXICAL_WEIGHT, HYBRID_METHODS, RRF_K

# In process, a BM25 index (bm25s) beside the texts; in LanceDB, the table's own full-text index. Qdrant's keyword
# side would be a sparse vector per text, which a collection must be created with: not yet.
HYBRID_BACKENDS = ("exact", "faiss", "lancedb")


@dataclass(frozen=True)
class HybridSpec:
    """How the keyword and dense lists are fused (`fusion`): `"rrf"` with `rrf_k`, or `"weighted"` with
    `lexical_weight`."""

    method: str
    rrf_k: int = RRF_K
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT

    def to_dict(self) -> dict[str, Any]:
        """What `index_config.json` keeps under `"hybrid"`: the method and its one setting."""
        if self.method == "rrf":
            return {"method": "rrf", "rrf_k": self.rrf_k}
        return {"method": self.method, "lexical_weight": self.lexical_weight}


def check_hybrid(
    hybrid: str | None, rrf_k: int | None, lexical_weight: float | None, backend: str
) -> HybridSpec | None:
    """The settings of `hybrid=`, or None (off); a one-line error for a setting that does not apply or is out of
    range."""
    if hybrid is None:
        if rrf_k is not None or lexical_weight is not None:
            raise ValueError('rrf_k and lexical_weight apply only with hybrid="rrf" or "weighted"')
        return None
    if hybrid not in HYBRID_METHODS:
        raise ValueError(f"hybrid must be None, 'rrf' or 'weighted', got {hybrid!r}")
    if backend not in HYBRID_BACKENDS:
        raise ValueError(
            f'hybrid= needs a keyword index: store="exact" or "faiss" (BM25 in this process) or "lancedb" (its '
            f"full-text index), not {backend!r}"
        )
    if hybrid == "rrf":
        if lexical_weight is not None:
            raise ValueError('lexical_weight applies to hybrid="weighted"; hybrid="rrf" fuses ranks (rrf_k)')
        if rrf_k is not None and (isinstance(rrf_k, bool) or not isinstance(rrf_k, int) or rrf_k < 1):
            raise ValueError(f"rrf_k must be a positive integer (60 is the usual constant), got {rrf_k!r}")
        return HybridSpec("rrf", rrf_k=RRF_K if rrf_k is None else rrf_k)
    if rrf_k is not None:
        raise ValueError('rrf_k applies to hybrid="rrf"; hybrid="weighted" sums normalised scores (lexical_weight)')
    weight = DEFAULT_LEXICAL_WEIGHT if lexical_weight is None else lexical_weight
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0.0 <= weight <= 1.0:
        raise ValueError(f"lexical_weight must be a number in [0, 1] (the BM25 share of the score), got {weight!r}")
    return HybridSpec("weighted", lexical_weight=float(weight))


def saved_hybrid_options(saved: Any, where: str) -> dict[str, Any]:
    """The constructor options of the `"hybrid"` entry of a saved index's config (absent: none); a damaged one is an
    error naming the file."""
    if saved is None:
        return {}
    if not isinstance(saved, dict) or saved.get("method") not in HYBRID_METHODS:
        raise ValueError(f"{where} has a damaged 'hybrid' entry ({saved!r}); rebuild the index")
    options = {"hybrid": saved["method"]}
    setting = "rrf_k" if saved["method"] == "rrf" else "lexical_weight"
    if setting in saved:
        options[setting] = saved[setting]
    return options


def hybrid_flags(hybrid: str | None, rrf_k: int | None, lexical_weight: float | None) -> dict[str, Any]:
    """The `--hybrid`, `--rrf_k` and `--lexical_weight` flags of `hfsiamese search` and `hfsiamese app` as
    `DuplicateIndex` options: none given, none (a saved index keeps its own); `--hybrid none`, dense only."""
    if hybrid in (None, "none"):
        if rrf_k is not None or lexical_weight is not None:
            raise ValueError("--rrf_k and --lexical_weight apply with --hybrid rrf or weighted")
        return {} if hybrid is None else {"hybrid": None}
    options: dict[str, Any] = {"hybrid": hybrid}
    if rrf_k is not None:
        options["rrf_k"] = rrf_k
    if lexical_weight is not None:
        options["lexical_weight"] = lexical_weight
    return options


__all__ = ["HYBRID_BACKENDS", "HybridSpec", "check_hybrid", "hybrid_flags", "saved_hybrid_options"]
