"""bertlab: BERT (Devlin et al., 2018) built from the paper, the package behind the bertlab book."""

from bertlab.config import PRESETS, BertConfig
from bertlab.model import (
    IGNORE_INDEX,
    BertForMultipleChoice,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
)
from bertlab.moved import install as _install_old_paths

_install_old_paths()  # the old flat import paths still work, with a warning (bertlab.moved)

__version__ = "0.1.0"
__all__ = [
    "PRESETS",
    "BertConfig",
    "IGNORE_INDEX",
    "BertModel",
    "BertForPreTraining",
    "BertForSequenceClassification",
    "BertForTokenClassification",
    "BertForQuestionAnswering",
    "BertForMultipleChoice",
]
