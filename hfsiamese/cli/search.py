"""`hfsiamese search`: find the indexed questions most similar to new ones: "has this already been asked?".

    hfsiamese search --model_name_or_path outputs/lstm_qqp --corpus questions.txt \\
        --query "How do I learn Python?" --query "Why is the sky blue?" --k 5
    hfsiamese search --model_name_or_path outputs/lstm_qqp --corpus questions.txt \\
        --index_dir outputs/qqp_index --query "How do I learn Python?"        # builds and saves the index
    hfsiamese search --index_dir outputs/qqp_index --model_name_or_path outputs/lstm_qqp \\
        --query "How can I lose weight?" --json                               # reuses it
    hfsiamese search --index_dir outputs/qqp_index --model_name_or_path outputs/lstm_qqp \\
        --cross_encoder outputs/cross_minilm_qqp --query "How can I lose weight?"  # reranked
    # millions of questions: encoded in resumable shards (accelerate launch: several processes), binary
    # codes in memory, the embeddings memory-mapped from --index_dir for rescoring
    accelerate launch -m hfsiamese.cli.search --model_name_or_path outputs/static_distilled_qqp --corpus questions.txt \\
        --index_dir outputs/big_index --shards_dir outputs/big_index_shards --store faiss --query "How do I learn Python?"
    # a database: inserts, deletes and metadata filters (a folder here; a server by URI)
    hfsiamese search --model_name_or_path outputs/lstm_qqp --corpus questions.csv --text_column question \\
        --metadata_column site --store lancedb --database outputs/questions_db --index_dir outputs/db_index \\
        --query "How do I learn Python?" --filter site=stackoverflow
    # keyword + dense: BM25 beside the embedding, for questions that share rare words (saved with the index)
    hfsiamese search --model_name_or_path outputs/lstm_qqp --corpus questions.txt --hybrid rrf \\
        --query "error 0x80070005 when installing Python 3.12"
    # the model on the fastest runtime its folder carries (itself, or an ONNX / OpenVINO export in a subfolder)
    hfsiamese search --index_dir outputs/qqp_index --model_name_or_path outputs/lstm_qqp --backend auto \\
        --query "How can I lose weight?"

The corpus is read as:
  * one text per line, for a `.txt` file whose first line has no tab (blank lines skipped);
  * a table (csv/tsv/json/jsonl/parquet) when --text_column names its text column (--id_column
    optionally its ids);
  * otherwise a question-pair file (any format `hfsiamese.data.load_pairs` reads): the questions
    of both columns, each distinct question once (by id where the file has ids, else by
    normalised text, as everywhere in hfsiamese), with its id where the file has ids.
--corpus_format forces one of `lines`, `table`, `pairs`.

Prints the top matches per query (score = cosine similarity, "duplicate" where the score reaches
the model's calibrated threshold or --threshold), or with --json one JSON object.

With --cross_encoder (a folder trained by `hfsiamese train cross_minilm_qqp`),
the bi-encoder retrieves --rerank_k candidates per query (default max(2k, 20)) and the cross-encoder
reranks them: the score shown is the cross-encoder's, in [0, 1], "duplicate" follows its calibrated
threshold (or --threshold, then a cross-encoder score), and --json also gives each match's
`retrieval_score` (the cosine). The cross-encoder is never saved into --index_dir.

With --hybrid rrf or weighted (stores exact, faiss and lancedb), BM25 keyword matches are fused with the
embedding's (see `DuplicateIndex`): the order follows the fused score, the score shown and
"duplicate" stay the cosine's, the fused score is shown in brackets; --json also gives each match's
`hybrid_score` and `lexical_score`.
A saved index is searched as it was saved unless --hybrid is given (`--hybrid none`: dense only).

--store says where the vectors are kept and searched; --backend is the model's runtime, as in `hfsiamese evaluate`
(`--backend faiss` and the other store names still work, with a FutureWarning, until hfsiamese 0.3).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from hfsiamese.backend_choice import BACKENDS as RUNTIMES, RUNTIME_HELP
from hfsiamese.cli.command_line import UsageError, run_recipe
from hfsiamese.cli.command_parser import command_parser
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.search import DuplicateIndex
from hfsiamese.search.backends import DATABASE_BACKENDS, STORES, store_and_runtime
from hfsiamese.search.corpus_files import CORPUS_FORMATS, read_corpus
from hfsiamese.search.index_opening import open_index
from hfsiamese.search.input_checks import check_k
from hfsiamese.search.lexical.fusion import HYBRID_METHODS
from hfsiamese.search.lexical.hybrid_settings import hybrid_flags
from hfsiamese.search.rerank_options import RERANK_K_WITHOUT_CROSS_ENCODER, check_rerank_k
from hfsiamese.search.reranking import cross_encoder_threshold
from hfsiamese.search.stores.ann_index import QUANTIZATIONS, STRUCTURES
from hfsiamese.search.stores.recall_tuning import DEFAULT_RECALL_TARGET, check_recall_target
from hfsiamese.utils.console import configure_quiet_console
from hfsiamese.utils.deprecation import renamed_option

DESCRIPTION = 'Find the indexed questions most similar to new ones: "has this already been asked?".'


@dataclass
class SearchArguments:
    model_name_or_path: str = field(metadata={"help": "Folder (or Hub id) of a trained Siamese model."})
    query: list[str] = field(
        metadata={"help": "A text to search for; repeat the flag (or give several) for more.", "action": "extend"}
    )
    corpus: str | None = field(default=None, metadata={"help": "File of texts to search (see the formats above)."})
    corpus_format: str = field(
        default="auto", metadata={"help": "auto, lines, table or pairs.", "choices": CORPUS_FORMATS}
    )
    text_column: str | None = field(default=None, metadata={"help": "Text column of a table corpus."})
    id_column: str | None = field(
        default=None, metadata={"help": "Id column of a table corpus (default: row numbers)."}
    )
    index_dir: str | None = field(
        default=None,
        metadata={
            "help": "Load the index saved here; if the folder is empty or missing, build it from --corpus and save it here."
        },
    )
    overwrite_index_dir: bool = field(
        default=False, metadata={"help": "Rebuild the index in --index_dir from --corpus."}
    )
    # Renamed overwrite_index_dir (`--overwrite_<the path option>`, as --overwrite_output_dir); kept for one release.
    overwrite_index: bool | None = field(default=None, metadata={"help": "Deprecated: use --overwrite_index_dir."})
    k: int = field(default=5, metadata={"help": "Matches per query."})
    store: str | None = field(
        default=None,
        metadata={
            "help": "Where the vectors are kept: exact (torch), faiss (quantised / approximate), or a database: "
            "lancedb or qdrant (default: a saved index's own, else exact).",
            "choices": STORES,
        },
    )
    backend: str | None = field(
        default=None,
        metadata={
            "help": f"{RUNTIME_HELP} A store name here is deprecated: use --store.",
            "choices": (*RUNTIMES, *STORES),
        },
    )
    quantization: str = field(
        default="auto",
        metadata={
            "help": "With --store faiss: none, int8, pq or binary (auto: none up to 1M texts; beyond, the cheapest "
            "codes that reach --recall_target on a sample of the corpus).",
            "choices": (*QUANTIZATIONS, "auto"),
        },
    )
    structure: str = field(
        default="auto",
        metadata={
            "help": "With --store faiss: flat, hnsw or ivf (auto: flat up to 1M texts; beyond, tuned with the codes).",
            "choices": (*STRUCTURES, "auto"),
        },
    )
    rescore_multiplier: int = field(
        default=8, metadata={"help": "With a quantised FAISS index: candidates rescored exactly per match asked for."}
    )
    recall_target: float = field(
        default=DEFAULT_RECALL_TARGET,
        metadata={
            "help": "With --store faiss: the share of the exact top 10 the index must find, measured on a sample "
            "of the corpus when it is built (auto settings are tuned to it; settings given below it are warned about)."
        },
    )
    database: str | None = field(
        default=None, metadata={"help": "With --store lancedb/qdrant: a folder (embedded) or the URI of a server."}
    )
    vector_index: bool = field(
        default=False,
        metadata={
            "help": "With --store lancedb: build (or rebuild) the database's approximate vector index (IVF, "
            "tuned to --recall_target) once the index is built or loaded; searches without --filter, in every "
            "process (hfsiamese serve too), go through it from then on."
        },
    )
    collection: str = field(default="duplicate_index", metadata={"help": "The table / collection in --database."})
    metadata_column: list[str] = field(
        default_factory=list,
        metadata={
            "help": "A column of a table corpus kept with each text, for --filter (database stores); repeat for more."
        },
    )
    filter: list[str] = field(
        default_factory=list,
        metadata={
            "help": "FIELD=VALUE (or FIELD=V1,V2 for any of them): only texts whose metadata match; repeat to AND."
        },
    )
    shards_dir: str | None = field(
        default=None,
        metadata={
            "help": "Encode the corpus in resumable shards here (a restarted build skips finished shards; under accelerate launch each process encodes its share)."
        },
    )
    shard_size: int = field(default=100_000, metadata={"help": "Texts per shard with --shards_dir."})
    threshold: float | None = field(
        default=None,
        metadata={
            "help": "Threshold for 'duplicate': a cosine (default: the model's), or with --cross_encoder a cross-encoder score (default: its own)."
        },
    )
    cross_encoder: str | None = field(
        default=None,
        metadata={"help": "Folder (or Hub id) of a trained cross-encoder that reranks the bi-encoder's candidates."},
    )
    rerank_k: int | None = field(
        default=None,
        metadata={"help": "Candidates per query the cross-encoder reranks (default: max(2k, 20)); at least --k."},
    )
    hybrid: str | None = field(
        default=None,
        metadata={
            "help": "Keyword + dense search: rrf (reciprocal rank fusion) or weighted (normalised scores) of BM25 and "
            "the cosine; none: dense only (default: a saved index's own, else none).",
            "choices": ("none", *HYBRID_METHODS),
        },
    )
    rrf_k: int | None = field(default=None, metadata={"help": "With --hybrid rrf: the rank constant (default 60)."})
    lexical_weight: float | None = field(
        default=None,
        metadata={"help": "With --hybrid weighted: BM25's share of the fused score, in [0, 1] (default 0.3)."},
    )
    batch_size: int = field(default=256, metadata={"help": "Texts per encoding batch."})
    max_length: int | None = field(default=None, metadata={"help": "Tokens kept per text (default: tokenizer's)."})
    json: bool = field(default=False, metadata={"help": "Print one JSON object instead of readable lines."})

    def __post_init__(self) -> None:
        renamed_option(self, "overwrite_index", "overwrite_index_dir")
        self.store, self.backend = store_and_runtime(self.store, self.backend, flag=True)  # --backend faiss: warned


def check_queries(queries: list[str]) -> None:
    """Each `--query` a non-empty text, said in the command line's words."""
    for number, query in enumerate(queries, start=1):
        if not query.strip():
            which = "the --query" if len(queries) == 1 else f"--query number {number} (of {len(queries)})"
            raise UsageError(f"{which} is empty: give the text of a question")


def parse_filter(specs: list[str]) -> dict[str, Any] | None:
    """`--filter site=cooking --filter lang=en,fr` as {"site": "cooking", "lang": ["en", "fr"]}."""
    fields: dict[str, Any] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name.strip() or not value:
            raise UsageError(f"--filter {spec!r} is not FIELD=VALUE (or FIELD=V1,V2)")
        values = value.split(",")
        fields[name.strip()] = values if len(values) > 1 else value
    return fields or None


def index_options(args: SearchArguments) -> dict[str, Any]:
    """The DuplicateIndex options the flags ask for (those of another store refused by the index itself)."""
    options = {"batch_size": args.batch_size, "max_length": args.max_length}
    if args.store is not None:
        options["store"] = args.store
    if args.store == "faiss":
        options.update(
            quantization=args.quantization,
            structure=args.structure,
            rescore_multiplier=args.rescore_multiplier,
        )
        if args.recall_target != DEFAULT_RECALL_TARGET:  # else a loaded index keeps the target it was measured at
            options["recall_target"] = args.recall_target
    elif (args.quantization, args.structure, args.rescore_multiplier) != ("auto", "auto", 8):
        raise UsageError("--quantization, --structure and --rescore_multiplier apply to --store faiss")
    elif args.recall_target != DEFAULT_RECALL_TARGET and not args.vector_index:
        raise UsageError("--recall_target applies to --store faiss, or to --store lancedb with --vector_index")
    if args.vector_index and args.store != "lancedb":
        raise UsageError("--vector_index applies to --store lancedb (a FAISS index is tuned to --recall_target anyway)")
    if args.vector_index:
        try:
            check_recall_target(args.recall_target)
        except ValueError as err:
            raise UsageError(f"--{err}") from None
    if args.store in DATABASE_BACKENDS:
        if args.database is None:
            raise UsageError(f"--store {args.store} needs --database (a folder, or the URI of a server)")
        options.update(database=args.database, collection=args.collection)
    elif args.database is not None:
        raise UsageError("--database applies to --store lancedb or qdrant")
    options.update(hybrid_options(args))
    return options


def hybrid_options(args: SearchArguments) -> dict[str, Any]:
    """The --hybrid flags as DuplicateIndex options (none given: a saved index's own)."""
    try:
        return hybrid_flags(args.hybrid, args.rrf_k, args.lexical_weight)
    except ValueError as err:
        raise UsageError(str(err)) from None


def build_or_load_index(args: SearchArguments) -> DuplicateIndex | None:
    """The index to search: loaded from --index_dir, or built from --corpus (None in the helper processes of a
    sharded build under accelerate launch, which only encode)."""
    options = index_options(args)
    if (
        args.threshold is not None and args.cross_encoder is None
    ):  # with a reranker, the threshold is the cross-encoder's
        options["threshold"] = args.threshold
    corpus = None
    if args.corpus is not None:
        corpus = partial(
            read_corpus, args.corpus, args.corpus_format, args.text_column, args.id_column, args.metadata_column
        )
    return open_index(
        args.model_name_or_path,
        args.index_dir,
        corpus,
        options=options,
        build_options={"shards_dir": args.shards_dir, "shard_size": args.shard_size},
        overwrite=args.overwrite_index_dir,
        overwrite_flag="--overwrite_index_dir",
        backend=args.backend,
    )


def format_results(queries: list[str], results: list[list[dict[str, Any]]]) -> str:
    lines = []
    for query, matches in zip(queries, results):
        lines.append(f"Query: {query}")
        for rank, match in enumerate(matches, start=1):
            flag = "duplicate" if match.get("is_duplicate") else ""
            retrieved = f" (cosine {match['retrieval_score']:.4f})" if "retrieval_score" in match else ""  # reranked
            if "hybrid_score" in match and not retrieved:  # keyword + dense: ordered by the fused score
                retrieved = f" (fused {match['hybrid_score']:.4f})"
            lines.append(f"  {rank:>2}. {match['score']:.4f}{retrieved} {flag:<9}  [{match['id']}] {match['text']}")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def load_cross_encoder(args: SearchArguments) -> Any | None:
    """The --cross_encoder reranker (None without one), its flags checked; loaded before the corpus is embedded."""
    if args.cross_encoder is None:
        if args.rerank_k is not None:
            raise UsageError(RERANK_K_WITHOUT_CROSS_ENCODER)
        return None
    if args.rerank_k is not None and args.rerank_k < args.k:
        raise UsageError(
            f"--rerank_k ({args.rerank_k}) must be at least --k ({args.k}): the cross-encoder reranks --rerank_k candidates and shows --k"
        )
    from hfsiamese.cross_encoder.model import CrossEncoder

    cross_encoder = CrossEncoder.from_pretrained(args.cross_encoder)
    cross_encoder_threshold(cross_encoder, args.threshold)  # a --threshold outside [0, 1], said before any work
    return cross_encoder


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """`hfsiamese search --model_name_or_path MODEL --corpus QUESTIONS --query TEXT [...]`: the matches (printed)."""
    parser = command_parser(SearchArguments, prog="hfsiamese search", description=DESCRIPTION)
    (args,) = parse_config_and_flags(parser, argv)
    check_queries(args.query)  # before the corpus is read and embedded, which may take minutes
    check_k(args.k)  # likewise (the index would refuse it only after the embedding)
    configure_quiet_console()
    cross_encoder = load_cross_encoder(args)
    search_filter = parse_filter(args.filter)
    if search_filter is not None and args.store not in DATABASE_BACKENDS and args.index_dir is None:
        raise UsageError(
            "--filter needs a database store (--store lancedb or qdrant) whose texts carry --metadata_column"
        )
    index = build_or_load_index(args)
    if index is None:
        return {}
    output = {"model_name_or_path": args.model_name_or_path, "num_texts": len(index), "k": args.k}
    if args.vector_index:
        output["vector_index"] = asdict(index.build_vector_index(recall_target=args.recall_target))
        print(f"vector index: {output['vector_index']}", file=sys.stderr)
    if index.hybrid is not None:
        output["hybrid"] = index.hybrid
    if cross_encoder is None:
        results = index.search(args.query, k=args.k, filter=search_filter)
        output["threshold"] = index.threshold
    else:
        rerank_k = check_rerank_k(args.rerank_k, args.k)
        results = index.search(
            args.query,
            k=args.k,
            cross_encoder=cross_encoder,
            rerank_k=rerank_k,
            threshold=args.threshold,
            filter=search_filter,
        )
        output.update(
            cross_encoder=args.cross_encoder,
            rerank_k=rerank_k,
            threshold=cross_encoder_threshold(cross_encoder, args.threshold),
            retrieval_threshold=index.threshold,
        )
    output["results"] = [{"query": query, "matches": matches} for query, matches in zip(args.query, results)]
    print(json.dumps(output, ensure_ascii=False) if args.json else format_results(args.query, results))
    return output


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
