"""
The models. Each folder holds exactly the code that travels with a checkpoint: `save_pretrained` copies
the modeling file and every sibling it imports with one dot next to the weights, so that
`AutoModel.from_pretrained(folder, trust_remote_code=True)` works where hfsiamese is not installed. A
folder here is flat and closed (no `..` import, nothing else from hfsiamese at import time).
"""

from hfsiamese.models.siamese import SiameseConfig, SiameseModel, SiameseModelOutput

__all__ = ["SiameseConfig", "SiameseModel", "SiameseModelOutput"]
