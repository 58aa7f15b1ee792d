"""
A duplicate-search web app over a corpus (Gradio, the optional `app` extra): "has this question
already been asked?", for people who do not write Python.

Tab 1 takes a new question and shows the k most similar earlier ones with their scores (and the
calibrated P(duplicate) when the model has a probability calibration) and the verdict, and, where the index has
duplicate groups (`hfsiamese groups`), each one's group and canonical question; tab 2 checks one pair; tab 3 lists
the largest groups (`app_groups`). The index is a saved `DuplicateIndex` or built from a corpus file at start (with a
progress bar in the terminal). With a cross-encoder (`--cross_encoder`), the search reranks the index's
candidates with it and shows its scores and verdict, and the pair check asks it too: the page then
decides with the stronger pair model. Every input problem — an empty or over-long question, a corpus that
does not parse — becomes a message on the page, never a stack trace. `hfsiamese app` is the
command; `build_app` returns the `gradio.Blocks` for embedding or testing.
"""

from __future__ import annotations

import html
import logging
import os
from dataclasses import dataclass, field
from typing import Any, cast

import torch

from hfsiamese.backend_choice import BACKENDS as RUNTIMES, RUNTIME_HELP
from hfsiamese.cli.app_groups import GroupCells
from hfsiamese.loading import load_siamese_model
from hfsiamese.search.corpus_files import CORPUS_FORMATS, CorpusFile, read_corpus
from hfsiamese.search.duplicate_index import DuplicateIndex
from hfsiamese.search.index_opening import open_index
from hfsiamese.search.input_checks import check_k
from hfsiamese.search.lexical.fusion import HYBRID_METHODS
from hfsiamese.search.lexical.hybrid_settings import hybrid_flags
from hfsiamese.search.rerank_options import check_rerank_k, refuse_rerank_k_without_cross_encoder
from hfsiamese.search.reranking import resolve_cross_encoder
from hfsiamese.service.settings import check_port
from hfsiamese.utils.deprecation import renamed_option
from hfsiamese.utils.extras import install_hint
from hfsiamese.utils.onnx_runtime import request_runtime_options

logger = logging.getLogger(__name__)

# Longer texts are refused on the page: a question is a few hundred characters, and a pasted document
# would only be truncated to the model's token limit anyway.
DEFAULT_MAX_CHARS = 2000
# What a broken corpus, index or model raises with a message meant for the user.
LOADING_ERRORS = (ValueError, FileNotFoundError, FileExistsError, ImportError, OSError, UnicodeDecodeError, TypeError)


@dataclass
class AppArguments:
    """Flags of `hfsiamese app`."""

    model_name_or_path: str = field(metadata={"help": "Folder of a trained Siamese model (PyTorch or ONNX export)."})
    corpus: str | None = field(
        default=None, metadata={"help": "File of earlier questions (formats as hfsiamese search)."}
    )
    index_dir: str | None = field(
        default=None,
        metadata={
            "help": "Folder of a saved DuplicateIndex: loaded if it holds one, else built from --corpus and saved there."
        },
    )
    index: str | None = field(default=None, metadata={"help": "Deprecated: use --index_dir."})
    backend: str | None = field(
        default=None,
        metadata={
            "help": RUNTIME_HELP,
            "choices": RUNTIMES,
        },
    )
    corpus_format: str = field(
        default="auto", metadata={"help": "auto, lines, table or pairs.", "choices": CORPUS_FORMATS}
    )
    text_column: str | None = field(default=None, metadata={"help": "Text column of a table corpus."})
    id_column: str | None = field(default=None, metadata={"help": "Id column of a table corpus."})
    host: str = field(default="127.0.0.1", metadata={"help": "Address to bind (127.0.0.1: this machine only)."})
    port: int = field(default=7860, metadata={"help": "Port to serve on."})
    k: int = field(default=5, metadata={"help": "Earlier questions shown per search."})
    max_chars: int = field(default=DEFAULT_MAX_CHARS, metadata={"help": "Longest question accepted, in characters."})
    batch_size: int = field(default=256, metadata={"help": "Texts per encoding batch when building the index."})
    cross_encoder: str | None = field(
        default=None,
        metadata={
            "help": "Folder of a trained cross-encoder: reranks the search's candidates and decides (also the pair check)."
        },
    )
    rerank_k: int | None = field(
        default=None,
        metadata={"help": "Candidates per search the cross-encoder reranks (default: max(2k, 20)); at least --k."},
    )
    hybrid: str | None = field(
        default=None,
        metadata={
            "help": "Keyword + dense search: rrf or weighted fusion of BM25 and the cosine; none: dense only "
            "(default: a saved index's own, else none). Scores and verdicts stay the cosine's.",
            "choices": ("none", *HYBRID_METHODS),
        },
    )
    rrf_k: int | None = field(default=None, metadata={"help": "With --hybrid rrf: the rank constant (default 60)."})
    lexical_weight: float | None = field(
        default=None, metadata={"help": "With --hybrid weighted: BM25's share of the fused score (default 0.3)."}
    )

    onnx_thread_spinning: bool = field(
        default=False,
        metadata={
            "help": "Let an ONNX model's onnxruntime threads spin between searches (onnxruntime's default); "
            "off (hfsiamese's default), they leave the cores to the page's server between searches."
        },
    )

    def __post_init__(self) -> None:
        renamed_option(self, "index", "index_dir")  # one name with `hfsiamese search`, `groups` and `serve`
        # Said before the index is built (the page would take them, and fail at the first search or at launch).
        check_port(self.port)
        check_k(self.k)
        refuse_rerank_k_without_cross_encoder(self.rerank_k, self.cross_encoder)
        if self.rerank_k is not None:
            check_rerank_k(self.rerank_k, self.k)

    def runtime_options(self) -> dict[str, dict[str, Any]]:
        """How the page's models are opened: an ONNX one without thread spinning unless `onnx_thread_spinning`, as
        `hfsiamese serve` opens them (each search is one short run between requests)."""
        return request_runtime_options(thread_spinning=self.onnx_thread_spinning)


def load_or_build_index(args: AppArguments, model: Any | None = None) -> DuplicateIndex:
    """The saved index in `args.index_dir` (whatever `args.corpus`), or one built from `args.corpus` (saved to `args.index_dir`
    when given): `index_opening.open_index`."""
    if model is None:
        model = load_siamese_model(
            args.model_name_or_path, backend=args.backend, runtime_options=args.runtime_options()
        )
    index = open_index(
        args.model_name_or_path,
        args.index_dir,
        None if args.corpus is None else lambda: _questions(args),
        model=model,
        options=hybrid_flags(args.hybrid, args.rrf_k, args.lexical_weight),
        build_options={"batch_size": args.batch_size},
        index_flag="--index_dir",
    )
    return cast(DuplicateIndex, index)  # None only in the helper processes of a sharded build, which the app never runs


def _questions(args: AppArguments) -> CorpusFile:
    """The corpus file's questions, refused when it holds none."""
    texts, ids, _ = read_corpus(args.corpus, args.corpus_format, args.text_column, args.id_column)
    if not texts:
        raise ValueError(f"{args.corpus} holds no questions")
    return CorpusFile(texts, ids, None)


class DuplicateSearch:
    """
    The app's two actions on one model and index, as functions of text to Markdown (what the page shows).
    With a `cross_encoder`, searches rerank `rerank_k` candidates (see `DuplicateIndex.search`) and it decides
    both actions: its scores, its threshold, its calibration.
    """

    def __init__(
        self,
        model: Any,
        index: DuplicateIndex,
        *,
        k: int = 5,
        max_chars: int = DEFAULT_MAX_CHARS,
        cross_encoder: Any | None = None,
        rerank_k: int | None = None,
    ) -> None:
        self.model, self.index, self.k, self.max_chars = model, index, k, max_chars
        self.cross_encoder = resolve_cross_encoder(cross_encoder) if cross_encoder is not None else None
        refuse_rerank_k_without_cross_encoder(rerank_k, self.cross_encoder)
        self.rerank_k = check_rerank_k(rerank_k, k) if self.cross_encoder is not None else None
        self.group_cells = GroupCells(index)  # each match's duplicate group, where the index has groups

    @property
    def pair_model(self) -> Any:
        """What decides a pair: the cross-encoder when there is one, else the Siamese model."""
        return self.cross_encoder if self.cross_encoder is not None else self.model

    def _problem(self, text: str | None, what: str) -> str | None:
        """What is wrong with an input text, as a message for the page, or None."""
        if text is None or not text.strip():
            return f"Type {what} first."
        if len(text) > self.max_chars:
            return f"{what[0].upper()}{what[1:]} is {len(text):,} characters long; the limit is {self.max_chars:,}. Shorten it."
        return None

    def search(self, question: str | None) -> tuple[str, str]:
        """(verdict, results table) for a new question."""
        problem = self._problem(question, "a question")
        if problem:
            return _message(problem), ""
        if self.cross_encoder is None:
            matches = self.index.search(question.strip(), k=self.k)
            threshold = self.index.threshold
        else:
            matches = self.index.search(
                question.strip(), k=self.k, cross_encoder=self.cross_encoder, rerank_k=self.rerank_k
            )
            threshold = getattr(self.cross_encoder.config, "threshold", None)
        matches = cast(list[dict[str, Any]], matches)  # one query (a string): one list of matches
        if not matches:
            return _message("The index is empty."), ""
        probabilities = self._probabilities(matches)
        reranked = "retrieval_score" in matches[0]
        best = max(matches, key=lambda m: m["score"])  # the first, but for keyword + dense (fused order)
        if threshold is None:
            verdict = (
                f"Closest earlier question (score {best['score']:.3f}); the model has no threshold to call duplicates."
            )
        elif best.get("is_duplicate"):
            verdict = f"**Already asked** — the best match scores {best['score']:.3f} ≥ threshold {threshold:.3f}."
        else:
            verdict = f"**New question** — no earlier question reaches the threshold {threshold:.3f} (best {best['score']:.3f})."
        header = ["#", "score", *(["cosine"] if reranked else []), *(["P(duplicate)"] if probabilities else [])]
        header += ["duplicate", "earlier question", "id"]
        groups = self.group_cells.for_matches(matches)
        header += ["group", "canonical question"] if groups else []
        rows = []
        for rank, match in enumerate(matches, start=1):
            cells = [str(rank), f"{match['score']:.3f}"]
            if reranked:  # the bi-encoder's score, beside the cross-encoder's
                cells.append(f"{match['retrieval_score']:.3f}")
            if probabilities:
                cells.append(f"{probabilities[rank - 1]:.3f}")
            cells += ["yes" if match.get("is_duplicate") else "no", _cell(match["text"]), _cell(str(match["id"]))]
            rows.append(cells + (groups[rank - 1] if groups else []))
        return verdict, _table(header, rows)

    def _probabilities(self, matches: list[dict[str, Any]]) -> list[float] | None:
        """Calibrated P(duplicate) of each match, when the index (the model's calibration) has a map."""
        if all("probability" in match for match in matches):
            return [float(match["probability"]) for match in matches]
        if self.cross_encoder is not None:  # the index's map is of cosines, not of the cross-encoder's scores
            return None
        calibrator = getattr(self.index, "calibrator", None)
        if calibrator is None:
            return None
        return [float(p) for p in calibrator.probability(torch.tensor([m["score"] for m in matches])).tolist()]

    def check_pair(self, first: str | None, second: str | None) -> str:
        """The verdict on one pair of questions."""
        problem = self._problem(first, "the first question") or self._problem(second, "the second question")
        if problem:
            return _message(problem)
        threshold = getattr(self.pair_model.config, "threshold", None)
        # The model's own decision rule (its threshold, or a calibrated probability threshold); any, when it has none.
        options = {} if threshold is not None else {"threshold": 0.0}
        result = self.pair_model.predict([first.strip()], [second.strip()], **options)
        score = float(result["scores"][0])
        probability = f", P(duplicate) {float(result['probability'][0]):.3f}" if "probability" in result else ""
        if threshold is None:
            return f"Score {score:.3f}{probability}; the model has no calibrated threshold to call duplicates."
        if bool(result["is_duplicate"][0]):
            return f"**Duplicates** — score {score:.3f} ≥ threshold {threshold:.3f}{probability}."
        return f"**Not duplicates** — score {score:.3f} < threshold {threshold:.3f}{probability}."


def _message(text: str) -> str:
    return f"⚠️ {html.escape(text)}"


def _cell(text: str) -> str:
    """A text as one Markdown table cell: escaped HTML, no pipes or line breaks."""
    return html.escape(" ".join(text.split())).replace("|", "&#124;")


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def build_app(
    app: DuplicateSearch | None, *, title: str = "Has this question been asked?", error: str | None = None
) -> Any:
    """
    The Gradio page. With `error` (the index or model could not be loaded) the page shows it instead
    of the search tabs, so a bad corpus reads as a message, not a stack trace.
    """
    try:
        import gradio as gr
    except ImportError as err:
        raise ImportError(f"the web app needs gradio: {install_hint('app')}") from err

    # Gradio's usage analytics and version check go over the network: off unless the user chose
    # (GRADIO_ANALYTICS_ENABLED set, which gradio reads when given None); an argument, not the environment.
    analytics = None if "GRADIO_ANALYTICS_ENABLED" in os.environ else False
    with gr.Blocks(title=title, analytics_enabled=analytics) as blocks:
        gr.Markdown(f"# {html.escape(title)}")
        if app is None:
            gr.Markdown(_message(error or "no index loaded"), elem_id="load-error")
            return blocks
        size = f"{len(app.index):,} earlier questions"
        reranker = ""
        if app.cross_encoder is not None:
            name = getattr(app.cross_encoder, "name_or_path", None) or "a cross-encoder"
            reranker = f", reranked by `{html.escape(str(name))}`"
        if getattr(app.index, "hybrid", None) is not None:  # keyword + dense: the order is the fused one
            reranker = f", keyword + dense ({app.index.hybrid}){reranker}"
        gr.Markdown(f"Searching {size} with `{html.escape(str(app.model.name_or_path or 'the model'))}`{reranker}.")
        with gr.Tab("Search"):
            question = gr.Textbox(label="New question", lines=2, elem_id="question")
            search_button = gr.Button("Search", variant="primary", elem_id="search")
            verdict = gr.Markdown(elem_id="verdict")
            results = gr.Markdown(elem_id="results")
            for trigger in (search_button.click, question.submit):
                trigger(app.search, inputs=question, outputs=[verdict, results], show_progress="minimal")
        with gr.Tab("Check a pair"):
            first = gr.Textbox(label="First question", elem_id="first")
            second = gr.Textbox(label="Second question", elem_id="second")
            check_button = gr.Button("Check", variant="primary", elem_id="check")
            pair_verdict = gr.Markdown(elem_id="pair-verdict")
            check_button.click(app.check_pair, inputs=[first, second], outputs=pair_verdict, show_progress="minimal")
        with gr.Tab("Groups"):
            largest = gr.Markdown(app.group_cells.largest(), elem_id="groups")
            gr.Button("Refresh", elem_id="refresh-groups").click(app.group_cells.largest, outputs=largest)
    return blocks


def app_from_arguments(args: AppArguments) -> Any:
    """Load the model and index (or the loading error, shown on the page) and build the page."""
    try:
        runtime_options = args.runtime_options()
        model = load_siamese_model(args.model_name_or_path, backend=args.backend, runtime_options=runtime_options)
        cross_encoder = (
            resolve_cross_encoder(args.cross_encoder, runtime_options=runtime_options)
            if args.cross_encoder is not None
            else None
        )
        index = load_or_build_index(args, model)
        app = DuplicateSearch(
            model, index, k=args.k, max_chars=args.max_chars, cross_encoder=cross_encoder, rerank_k=args.rerank_k
        )
    except LOADING_ERRORS as err:
        logger.error("%s", err)
        return build_app(None, error=f"Could not load the model or the corpus: {err}")
    except (
        Exception
    ) as err:  # e.g. a data set reader's own error types: still a message on the page, traceback in the log
        logger.exception("loading the model or the corpus failed")
        return build_app(None, error=f"Could not load the model or the corpus: {type(err).__name__}: {err}")
    return build_app(app)


__all__ = ["AppArguments", "DuplicateSearch", "app_from_arguments", "build_app", "load_or_build_index"]
