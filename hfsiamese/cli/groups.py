"""`hfsiamese groups`: group a corpus's duplicate questions, each group with a canonical question to link to.

    hfsiamese groups --model_name_or_path outputs/lstm_qqp --corpus questions.txt --output_file groups.parquet
    hfsiamese groups --model_name_or_path outputs/lstm_qqp --index_dir outputs/qqp_index \\
        --probability_threshold 0.9 --guard canonical --canonical most_central --output_file groups.parquet --json

The index is the one `hfsiamese search` builds or loads (`--index_dir`, `--corpus`, `--store` and `--backend` as there).
Its duplicate pairs (cosine at the model's calibrated threshold, `--threshold`, or the cosine whose calibrated
P(duplicate) reaches `--probability_threshold`) are joined into connected components, split where they chain
(A≈B, B≈C, A≉C) by `--guard` (`cross_encoder`: the links the mean guard would refuse decided by `--cross_encoder`,
at most `--cross_encoder_budget` pairs per 1,000 questions); each group's canonical question is its earliest member
or its most central one.
The groups are kept with the index in `--index_dir` (or in its database), so `DuplicateIndex.add(...,
assign_groups=True)` keeps them current; `--output_file` also writes one row per question (`id`, `group`,
`canonical_id`, `score`, `group_size`) as its suffix says: .parquet, .jsonl, or none (a `save_to_disk` folder).
Prints the largest groups (or with --json one JSON object).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from hfsiamese.cli.command_line import UsageError, run_recipe
from hfsiamese.cli.command_parser import command_parser
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.cli.search import SearchArguments
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.mining.dataset_files import check_output_path, save_dataset_file
from hfsiamese.models.siamese.score_calibrator import check_probability_threshold
from hfsiamese.models.siamese.scoring import check_threshold
from hfsiamese.search.backends import DATABASE_BACKENDS, STORES, store_and_runtime
from hfsiamese.search.corpus_files import read_corpus
from hfsiamese.search.groups import CANONICAL_RULES, DEFAULT_GUARD, GUARDS
from hfsiamese.search.groups.cross_encoder_guard import DEFAULT_BUDGET, DEFAULT_CHECK_SIZE
from hfsiamese.search.groups.duplicate_groups import check_group_threshold
from hfsiamese.search.groups.group_finding import cross_encoder_guard_threshold
from hfsiamese.search.groups.group_storage import save_groups_file
from hfsiamese.search.index_opening import open_index
from hfsiamese.utils.console import configure_quiet_console

DESCRIPTION = "Group a corpus's duplicate questions, each group with a canonical question to link to."


def same_as_search(name: str) -> Any:
    """The `hfsiamese search` option of that name (its default and help): the corpus is read alike."""
    option = next(f for f in dataclasses.fields(SearchArguments) if f.name == name)
    return field(default=option.default, metadata=dict(option.metadata))


@dataclass
class GroupsArguments:
    model_name_or_path: str = field(metadata={"help": "Folder (or Hub id) of a trained Siamese model."})
    corpus: str | None = field(default=None, metadata={"help": "File of texts (formats as hfsiamese search)."})
    corpus_format: str = same_as_search("corpus_format")
    text_column: str | None = same_as_search("text_column")
    id_column: str | None = same_as_search("id_column")
    index_dir: str | None = field(
        default=None,
        metadata={
            "help": "Load the index saved here (else build it from --corpus and save it here); groups kept in it."
        },
    )
    store: str | None = field(
        default=None,
        metadata={
            "help": "exact, faiss, lancedb or qdrant (default: a saved index's own, else exact).",
            "choices": STORES,
        },
    )
    backend: str | None = same_as_search("backend")  # the model's runtime
    database: str | None = field(default=None, metadata={"help": "With --store lancedb/qdrant: folder or URI."})
    collection: str = field(default="duplicate_index", metadata={"help": "The table / collection in --database."})
    threshold: float | None = field(
        default=None, metadata={"help": "Cosine of a duplicate pair (default: the model's calibrated threshold)."}
    )
    probability_threshold: float | None = field(
        default=None, metadata={"help": "Instead of --threshold: the calibrated P(duplicate) a pair must reach."}
    )
    k: int = field(default=10, metadata={"help": "Nearest neighbours searched per question for pairs."})
    guard: str = field(
        default=DEFAULT_GUARD,
        metadata={
            "help": "Against chaining: mean (a member's mean cosine to its group), canonical (its cosine to the canonical), none (plain connected components), or cross_encoder (mean, its borderline links decided by --cross_encoder).",
            "choices": GUARDS,
        },
    )
    canonical: str = field(
        default="earliest",
        metadata={"help": "Each group's canonical question: earliest or most_central.", "choices": CANONICAL_RULES},
    )
    group_threshold: float | None = field(
        default=None,
        metadata={"help": "The guard's bar, where it differs from the pair threshold (fit_group_threshold fits one)."},
    )
    cross_encoder: str | None = field(
        default=None,
        metadata={"help": "With --guard cross_encoder: the cross-encoder folder that decides borderline links."},
    )
    cross_encoder_threshold: float | None = field(
        default=None,
        metadata={
            "help": "With --guard cross_encoder: the score that accepts a link (default: the cross-encoder's calibrated one)."
        },
    )
    cross_encoder_budget: float = field(
        default=DEFAULT_BUDGET,
        metadata={"help": "With --guard cross_encoder: cross-encoder pairs scored at most per 1,000 questions."},
    )
    check_size: int | None = field(
        default=DEFAULT_CHECK_SIZE,
        metadata={"help": "With --guard cross_encoder: from this group size, every joining question is checked."},
    )
    output_file: str | None = field(
        default=None,
        metadata={
            "help": "Write one row per question (id, group, canonical_id, score, group_size) here: .parquet, .jsonl, "
            "or no suffix for a save_to_disk folder."
        },
    )
    overwrite_output_file: bool = field(default=False, metadata={"help": "Replace an existing --output_file."})
    largest: int = field(default=10, metadata={"help": "Largest groups printed."})
    batch_size: int = field(default=256, metadata={"help": "Texts per encoding batch when building the index."})
    json: bool = field(default=False, metadata={"help": "Print one JSON object instead of readable lines."})

    def __post_init__(self) -> None:
        self.store, self.backend = store_and_runtime(self.store, self.backend, flag=True)  # --backend faiss: warned


def check_arguments(args: GroupsArguments) -> None:
    """The flags' mistakes, said before the corpus is embedded."""
    if args.corpus is None and args.index_dir is None:
        raise UsageError("pass --corpus (a file of questions) or --index_dir (a saved index)")
    if args.threshold is not None and args.probability_threshold is not None:
        raise UsageError("pass --threshold (a cosine) or --probability_threshold (a P(duplicate)), not both")
    if (args.store in DATABASE_BACKENDS) != (args.database is not None):
        raise UsageError("--database goes with --store lancedb or qdrant, and they need it")
    if args.output_file is not None:  # a kind its suffix names (a .csv was written as Parquet), not one already there
        try:
            check_output_path(args.output_file, overwrite=args.overwrite_output_file, flag="--overwrite_output_file")
        except (ValueError, FileExistsError) as err:
            raise UsageError(f"--output_file {err}") from err
    if (args.guard == "cross_encoder") != (args.cross_encoder is not None):
        raise UsageError("--cross_encoder goes with --guard cross_encoder, and it needs one")
    guard_only = {
        "--cross_encoder_threshold": args.cross_encoder_threshold is not None,
        "--cross_encoder_budget": args.cross_encoder_budget != DEFAULT_BUDGET,
        "--check_size": args.check_size != DEFAULT_CHECK_SIZE,
    }
    given = [flag for flag, changed in guard_only.items() if changed]
    if given and args.guard != "cross_encoder":  # another guard would ignore them
        verb = "applies" if len(given) == 1 else "apply"
        raise UsageError(f"{', '.join(given)} {verb} only with --guard cross_encoder (the guard is {args.guard})")
    if args.k < 1 or args.largest < 0:
        raise UsageError("--k must be at least 1 and --largest at least 0")
    check_threshold(args.threshold)  # the bars too: find_groups would refuse them only after the embedding
    if args.probability_threshold is not None:
        check_probability_threshold(args.probability_threshold)
    check_group_threshold(args.group_threshold)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """`hfsiamese groups --model_name_or_path MODEL (--corpus FILE | --index_dir DIR)`: the groups (summary printed)."""
    parser = command_parser(GroupsArguments, prog="hfsiamese groups", description=DESCRIPTION)
    (args,) = parse_config_and_flags(parser, argv)
    check_arguments(args)
    configure_quiet_console()
    options: dict[str, Any] = {"batch_size": args.batch_size}
    if args.store is not None:
        options["store"] = args.store
    if args.database is not None:
        options.update(database=args.database, collection=args.collection)
    corpus = None
    if args.corpus is not None:
        corpus = partial(read_corpus, args.corpus, args.corpus_format, args.text_column, args.id_column, [])
    cross_encoder = None
    if args.cross_encoder is not None:  # loaded (or refused) before the corpus is embedded
        from hfsiamese.cross_encoder.model import CrossEncoder

        cross_encoder = CrossEncoder.from_pretrained(args.cross_encoder)
        # Its threshold (given, or the one it was calibrated with), budget and check size, as find_groups checks them.
        cross_encoder_guard_threshold(
            cross_encoder, args.cross_encoder_threshold, args.cross_encoder_budget, args.check_size
        )
    index = open_index(args.model_name_or_path, args.index_dir, corpus, options=options, backend=args.backend)
    groups = index.find_groups(
        args.threshold, args.k, probability_threshold=args.probability_threshold, guard=args.guard,
        canonical=args.canonical, show_progress_bar=not args.json, cross_encoder=cross_encoder,
        cross_encoder_threshold=args.cross_encoder_threshold, cross_encoder_budget=args.cross_encoder_budget,
        check_size=args.check_size, group_threshold=args.group_threshold,
    )  # fmt: skip
    if args.index_dir is not None and index.database_store is None:  # a database keeps them itself
        save_groups_file(groups, args.index_dir)
    if args.output_file is not None:  # an existing one was refused above unless --overwrite_output_file
        save_dataset_file(groups.to_dataset(), args.output_file, overwrite=args.overwrite_output_file)
    largest = groups.largest(args.largest)
    texts = index.rows_by_id([canonical for _, canonical, _ in largest])[0]
    output = {
        "num_texts": len(index),
        "num_groups": len(groups),
        "groups_with_duplicates": sum(1 for _, _, size in groups.largest(len(groups))),
        "settings": groups.settings.to_dict(),
        "output_file": args.output_file,
        "largest": [
            {"group": group, "size": size, "canonical_id": canonical, "canonical_text": text}
            for (group, canonical, size), text in zip(largest, texts)
        ],
    }
    index.close()
    if args.json:
        print(json.dumps(output, ensure_ascii=False))
    else:
        print(
            f"{output['num_texts']} questions in {output['num_groups']} groups, {output['groups_with_duplicates']} "
            f"with duplicates (cosine >= {groups.settings.threshold:.4f}, guard {args.guard})"
        )
        for row in output["largest"]:
            print(
                f"  group {row['group']:>6}  {row['size']:>5} questions  [{row['canonical_id']}] {row['canonical_text']}"
            )
    return output


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
