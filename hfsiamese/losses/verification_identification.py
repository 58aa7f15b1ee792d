"""Joint classification (identification) + cosine-embedding (verification) loss with a pair head."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hfsiamese.losses.base import SiameseLoss, SiameseLossOutput, require_non_negative


class VerificationIdentificationLoss(SiameseLoss):
    r"""
    Cross-entropy of a classification head on the pair features plus a weighted cosine-embedding
    loss on the embeddings themselves.

    With L2-normalised embeddings ``u``, ``v``, labels ``y ∈ {0, 1}`` and the head's logits
    ``z = head([u, v, |u − v|, u ∗ v])``:

    .. math::
        L = \operatorname{CE}(z, y) + w \cdot \frac{1}{B} \sum_i
            \begin{cases} 1 - \cos(u_i, v_i) & y_i = 1 \\ \max(0, \cos(u_i, v_i) - m) & y_i = 0 \end{cases}

    The classification term ("identification") learns the decision from rich pair features; the
    cosine term ("verification") keeps the embeddings themselves meaningful, so the model still
    serves retrieval and cosine scoring. The model must have a classification head
    (`SiameseConfig(classifier_head=True)`); its logits come in as `logits`. Statistics (`compute`):
    ``classification_loss`` and ``verification_loss``, the two terms.

    Inputs:
        embeddings_a, embeddings_b: ``(B, d)`` L2-normalised; labels: ``(B,)`` 0/1;
        logits: ``(B, 2)`` from the model's head.

    Reference:
        Sun, Wang & Tang (2014), "Deep Learning Face Representation by Joint
        Identification-Verification" (DeepID2); the pair-classifier form follows biome.text's
        SimilarityClassifier.

    Examples:
        >>> loss_fn = VerificationIdentificationLoss(margin=0.5, verification_weight=1.0)
        >>> u = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
        >>> v = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
        >>> loss = loss_fn(u, v, labels=torch.tensor([1, 0, 1, 0]), logits=torch.randn(4, 2))
    """

    requires_labels = True
    uses_logits = True

    def __init__(self, margin: float = 0.5, verification_weight: float = 1.0) -> None:
        super().__init__()
        if not -1.0 <= margin <= 1.0:
            raise ValueError(f"margin is a cosine similarity and must lie in [-1, 1], got {margin}")
        require_non_negative("verification_weight", verification_weight)
        self.margin = margin
        self.verification_weight = verification_weight

    def _compute(self, embeddings_a, embeddings_b, *, labels, group_ids, negatives, logits) -> SiameseLossOutput:
        labels = labels.long()
        # bf16/fp16 logits are scored in float32; float64 stays float64.
        classification = F.cross_entropy(logits.to(torch.promote_types(logits.dtype, torch.float32)), labels)
        # The cosine-embedding loss written out (F.cosine_embedding_loss adds an epsilon inside
        # the norms, which makes its value and gradient differ slightly from the formula).
        cosine = (embeddings_a * embeddings_b).sum(dim=-1) / (
            embeddings_a.norm(dim=-1) * embeddings_b.norm(dim=-1)
        ).clamp_min(1e-12)
        verification = torch.where(labels == 1, 1.0 - cosine, torch.relu(cosine - self.margin)).mean()
        stats = {"classification_loss": classification.detach(), "verification_loss": verification.detach()}
        return SiameseLossOutput(classification + self.verification_weight * verification, stats)
