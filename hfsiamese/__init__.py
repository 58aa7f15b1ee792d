"""hfsiamese: Siamese (bi-encoder) networks for duplicate-question and paraphrase detection."""

from transformers import AutoConfig, AutoModel

from .configuration_siamese import SiameseConfig
from .modeling_siamese import SiameseModel, SiameseModelOutput

# Auto classes: `AutoModel.from_pretrained(folder)` works with hfsiamese imported, and the saved
# config carries an `auto_map` plus the modeling code so that it also works without hfsiamese.
AutoConfig.register(SiameseConfig.model_type, SiameseConfig, exist_ok=True)
AutoModel.register(SiameseConfig, SiameseModel, exist_ok=True)
SiameseConfig.register_for_auto_class()
SiameseModel.register_for_auto_class("AutoModel")

__version__ = "0.1.0"

__all__ = ["SiameseConfig", "SiameseModel", "SiameseModelOutput", "__version__"]
