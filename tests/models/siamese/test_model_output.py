"""A forward's output made from a batch's embeddings: each pair's cosine beside them."""

import torch
import torch.nn.functional as F

from hfsiamese.models.siamese.model_output import SiameseModelOutput


def test_of_pairs_scores_each_pair_by_its_cosine():
    torch.manual_seed(0)
    a, b = F.normalize(torch.randn(3, 4), dim=-1), F.normalize(torch.randn(3, 4), dim=-1)
    output = SiameseModelOutput.of_pairs(a, b, logits=torch.zeros(3, 2))
    torch.testing.assert_close(output.similarity, F.cosine_similarity(a, b))
    assert output.embeddings_n is None and output.to_tuple()[0] is output.similarity and len(output.to_tuple()) == 4
