"""What the service's correctness scripts share: a grouped LanceDB index of QQP questions to serve, `hfsiamese serve`
run as a process on a free loopback port, and the rows and groups read back from the index once the service is gone.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser
from benchmarks.serving.service_load import free_port, start

if TYPE_CHECKING:
    from hfsiamese.search.stores.ann_index import AnnSpec


def script_parser(doc: str | None, *, corpus_size: int, concurrency: int) -> argparse.ArgumentParser:
    """The options every correctness script takes: the model, the clients, the corpus, the seed, the work folder."""
    parser = argument_parser(doc)
    parser.add_argument("--model_name_or_path", required=True)
    parser.add_argument("--concurrency", type=int, default=concurrency)
    parser.add_argument("--corpus_size", type=int, default=corpus_size)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work_dir", default=None, help="where the index is built (default: a temporary folder)")
    parser.add_argument(
        "--index_dir",
        default=None,
        help="a saved database index to check instead of building one (copied to --work_dir first: never written)",
    )
    return parser


def work_folder(parser: argparse.ArgumentParser, work_dir: str | None, prefix: str) -> Path:
    """`--work_dir` (new or empty: a script never builds over what is there), else a new temporary folder."""
    work = Path(work_dir or tempfile.mkdtemp(prefix=prefix))
    if work.exists() and any(work.iterdir()):
        parser.error(f"--work_dir {work} is not empty: give a new folder")
    work.mkdir(parents=True, exist_ok=True)
    return work


def build_index(
    model_name_or_path: str, texts: list[str], root: Path, store: str = "lancedb", ann: AnnSpec | None = None
) -> Path:
    """`texts` (ids 0..n-1) grouped in an index saved to `root / "index"`: its rows in a LanceDB database under
    `root` (the writable service's default), or with `store="faiss"` in the index folder itself (`ann`: its
    FAISS settings; default tuned to the recall target)."""
    from hfsiamese.search import DuplicateIndex

    place = {"database": root / "db"} if store == "lancedb" else {"ann": ann} if ann is not None else {}
    index = DuplicateIndex.build(texts, model_name_or_path, ids=list(range(len(texts))), store=store, **place)
    index.find_groups()
    index.save(root / "index")
    index.close()
    return root / "index"


def copied_index(index_dir: str, model_name_or_path: str, root: Path) -> Path:
    """A copy of the saved database index `index_dir` to serve and write to: its database copied to `root / "db"` and
    the folder saved again to `root / "index"`, pointing there, so that a check's adds never reach the user's index
    (its vector index and groups, if any, come along)."""
    import shutil

    from hfsiamese.search import DuplicateIndex

    index = DuplicateIndex.load(index_dir, model_name_or_path)
    try:
        if not index.store.database:
            raise SystemExit(f"--index_dir {index_dir} keeps its rows in its folder: give an index in a database")
        source, collection = Path(index.database), index.collection
    finally:
        index.close()
    shutil.copytree(source, root / "db")
    index = DuplicateIndex.load(index_dir, model_name_or_path, database=str(root / "db"), collection=collection)
    try:
        index.save(root / "index")
    finally:
        index.close()
    return root / "index"


def reindex(model_name_or_path: str, index_dir: Path, root: Path, ann: AnnSpec) -> Path:
    """The FAISS index saved in `index_dir` with its FAISS index built anew to `ann` (its rows and groups kept), saved
    to `root / "index"`: how a site changes the settings of the index it serves."""
    from hfsiamese.search import DuplicateIndex

    index = DuplicateIndex.load(index_dir, model_name_or_path, ann=ann)
    index.search([index.texts[0]], k=1)  # the new FAISS index is built (and measured) before it is saved
    index.save(root / "index")
    index.close()
    return root / "index"


class ServiceProcess:
    """`hfsiamese serve` over `index_dir` on a free loopback port, ready when built; its output goes to `log_path`."""

    def __init__(self, index_dir: Path, model_name_or_path: str, log_path: Path, *flags: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "hfsiamese.cli.serve", "--index_dir", str(index_dir),
                   "--model_name_or_path", model_name_or_path, "--port", str(self.port), "--log_level", "warning",
                   *flags]  # fmt: skip
        with open(log_path, "ab") as log:  # a file, never a pipe nobody reads
            self.process: subprocess.Popen = start(command, self.port, stdout=log, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        """SIGKILL: no shutdown step runs."""
        self.process.kill()
        self.process.wait(timeout=60)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def rows_and_groups(index_dir: Path, model_name_or_path: str) -> tuple[list[Any], list[str], set[frozenset[Any]]]:
    """The ids and texts the saved index holds, in its order, and its duplicate groups (as a partition of ids)."""
    from hfsiamese.search.index_opening import open_index

    index = open_index(model_name_or_path, str(index_dir), None)
    try:
        groups = index.groups
        return list(index.ids), list(index.texts), set() if groups is None else groups.partition()
    finally:
        index.close()


def rebuilt_groups(model_name_or_path: str, ids: list[Any], texts: list[str], database: Path) -> set[frozenset[Any]]:
    """The groups `find_groups` makes on the same rows in the same order, in a fresh LanceDB `database`: the same
    backend as the service's, so that neighbours at equal scores come back in the same order (an in-memory index
    breaks such ties otherwise, and with k neighbours per question that changes groups)."""
    from hfsiamese.search import DuplicateIndex

    index = DuplicateIndex.build(texts, model_name_or_path, ids=ids, store="lancedb", database=database)
    try:
        return index.find_groups().partition()
    finally:
        index.close()


__all__ = [
    "ServiceProcess",
    "build_index",
    "copied_index",
    "rebuilt_groups",
    "reindex",
    "rows_and_groups",
    "script_parser",
    "work_folder",
]
