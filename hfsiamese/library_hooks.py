"""
What `import hfsiamese` installs into the model classes of the folder that travels with every checkpoint.

That folder (`hfsiamese/models/siamese/`) imports nothing of hfsiamese at import time, so where it needs the library
it calls a hook on its class that does nothing useful by itself, and hfsiamese sets it here:

- `EncodingPolicyMixin.encode_policy`: the machine policy of `encode`, as the process chose it (`hfsiamese.cpu_policy`):
  fewer threads while other processes keep the cores busy (`hfsiamese.utils.core_sharing`), the default `dtype`, and
  what `dtype="auto"` means, measured on the model (`hfsiamese.utils.encode_precision`);
- `HubSharingMixin.card_builder`: the model card `push_to_hub` generates when the model's folder holds none
  (`hfsiamese.bi_encoder.model_card`, imported when a card is built);
- `SiameseModel.sentence_transformers_reader`: how `from_sentence_transformers` reads a sentence-transformers folder
  and what `from_encoder_pretrained` warns that it leaves out of one (`hfsiamese.bi_encoder`, imported when asked).

A checkpoint loaded as remote code has classes of its own, which keep the folder's defaults: torch's threads, float32,
and no generated card.
"""

from __future__ import annotations

from typing import Any

import torch

from hfsiamese.models.siamese.encoding_policy import EncodePolicy, EncodePrecision, EncodingPolicyMixin
from hfsiamese.models.siamese.hub_sharing import HubSharingMixin
from hfsiamese.models.siamese.modeling_siamese import SentenceTransformersReader, SiameseModel
from hfsiamese.utils import core_sharing, cpu_features, encode_precision

__all__ = ["LibraryEncodePolicy", "LibrarySentenceTransformersReader", "build_card", "install"]


class LibraryEncodePolicy(EncodePolicy):
    """The process's CPU policy applied to `encode` (looked up at each call: `set_cpu_policy` may change it)."""

    def default_dtype(self) -> torch.dtype | str | None:
        return encode_precision.default_dtype()

    def thread_adapter(self, device: torch.device) -> core_sharing.CoreSharing | None:
        # Another process busy on these cores: fewer threads until it stops, restored after the call.
        return core_sharing.CoreSharing() if device.type == "cpu" and core_sharing.enabled() else None

    def check_dtype(self, model: Any, dtype: torch.dtype) -> None:
        if dtype == torch.bfloat16 and model.device.type == "cpu":
            cpu_features.check_bf16_runs(model, requested_by="dtype=torch.bfloat16")

    def choose_precision(self, model: Any) -> EncodePrecision:
        native = model.device.type == "cpu" and encode_precision.native_cpu_bf16()
        if native and cpu_features.has_lstm(model) and not cpu_features.runs_lstm_in_bf16():  # a capped oneDNN
            return EncodePrecision(None, "fp32: this CPU cannot run an LSTM in bf16 (oneDNN needs AVX-512)")
        # Measured on the model itself: a probe batch of its vocabulary, timed both ways, remembered per architecture.
        probe = encode_precision.probe_batch(model.embedding_rows(), model.device, model.padding_id())
        return encode_precision.choose_encode_precision(
            model._embed_batch, probe, model.device, model_key=model._architecture_key()
        )


class LibrarySentenceTransformersReader(SentenceTransformersReader):
    """The folder read as `hfsiamese train` reads it (`hfsiamese.bi_encoder.model_building`), one reader for both."""

    def load(self, model_name_or_path: str, **model_arguments: Any) -> tuple[Any, Any]:
        from hfsiamese.bi_encoder.model_building import sentence_transformers_model

        return sentence_transformers_model(model_name_or_path, **model_arguments)

    def unfaithful_loading_warning(self, source: Any, **settings: Any) -> str | None:
        from hfsiamese.bi_encoder.sentence_transformers_folder import unfaithful_loading_warning

        return unfaithful_loading_warning(source, **settings)


def build_card(model: Any, **kwargs: Any) -> Any:
    """`hfsiamese.bi_encoder.model_card.build_model_card`, imported on first use (it loads the losses)."""
    from hfsiamese.bi_encoder.model_card import build_model_card

    return build_model_card(model, **kwargs)


def install() -> None:
    """Set the hooks (`import hfsiamese` does; again is harmless)."""
    EncodingPolicyMixin.encode_policy = LibraryEncodePolicy()
    HubSharingMixin.card_builder = build_card
    SiameseModel.sentence_transformers_reader = LibrarySentenceTransformersReader()
