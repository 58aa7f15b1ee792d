"""
The Siamese bi-encoder: one shared encoder (LSTM, static, or any `AutoModel`), cosine similarity, a
calibrated threshold, `encode`/`predict`/`classify`, and the `question-duplicates` pipeline.

Every file of this folder travels with every checkpoint as remote code (`register_for_auto_class`
copies `modeling_siamese.py`, `configuration_siamese.py` and the siblings they import relatively), so
the folder is flat and closed: its files import each other with one dot and nothing else of hfsiamese,
except where a method needs the installed library and says so at its import (fitting a calibration,
generating a model card). `tests/models/siamese/test_remote_code.py` holds it to that.
"""

from .configuration_siamese import SiameseConfig
from .modeling_siamese import SiameseModel, SiameseModelOutput
from .pipeline_question_duplicates import PIPELINE_TASK, QuestionDuplicatesPipeline

__all__ = ["PIPELINE_TASK", "QuestionDuplicatesPipeline", "SiameseConfig", "SiameseModel", "SiameseModelOutput"]
