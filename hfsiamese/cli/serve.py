"""`hfsiamese serve`: duplicate detection over HTTP: search, check, add, delete and groups as a JSON API.

    hfsiamese serve --index_dir outputs/qqp_index --model_name_or_path outputs/lstm_qqp
    hfsiamese serve --index_dir outputs/db_index --model_name_or_path outputs/lstm_qqp \\
        --host 0.0.0.0 --port 8000 --api_keys_file keys.txt          # beyond this machine: keys required
    hfsiamese serve --index_dir outputs/qqp_index --model_name_or_path outputs/lstm_qqp \\
        --cross_encoder outputs/cross_minilm_qqp --read_only         # reranked searches, no writes
    hfsiamese serve --index_dir outputs/qqp_index --model_name_or_path outputs/lstm_qqp --backend auto
                                                                     # the fastest runtime the model folder carries
    hfsiamese serve --index_dir outputs/db_index --model_name_or_path outputs/lstm_qqp \\
        --port 8001 --replica                                       # a read replica of the writer on 8000
    hfsiamese serve --index_dir outputs/db_index --model_name_or_path outputs/lstm_qqp \\
        --mount_app /app                                            # the web page too, behind the same keys

--index_dir is a folder holding a saved index (`hfsiamese search --index_dir ... --corpus ...` or
`hfsiamese groups` writes one). A writable service should keep its rows in a database (an index built
with --store lancedb or qdrant): each add and delete is durable there before the answer. An index
kept in the folder itself is saved again after each write.

The API is versioned under /v1 (its OpenAPI schema at /openapi.json, a page at /docs); /health/live,
/health/ready (503 until the index is loaded) and /metrics (Prometheus). Keys: --api_keys_file, one
`read:KEY` or `write:KEY` a line, and the HFSIAMESE_API_KEYS environment variable (the same entries,
comma-separated); a request sends `Authorization: Bearer KEY`. Read replicas: one writer and any
number of `--replica` processes over the same database index (LanceDB or Qdrant); a replica refuses
writes (403) and reopens its index every --replica_refresh_s seconds. Needs the `serve` extra.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hfsiamese.backend_choice import BACKENDS as RUNTIMES, RUNTIME_HELP
from hfsiamese.cli.command_line import UsageError, run_recipe
from hfsiamese.cli.command_parser import command_parser
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.cli.listening import bind_socket
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.search.stores.index_files import INDEX_CONFIG_NAME
from hfsiamese.service import truncation_log
from hfsiamese.service.settings import DEFAULT_MAX_CHARS, Batching, Limits, ServeSettings
from hfsiamese.utils.console import configure_quiet_console
from hfsiamese.utils.extras import install_hint

DESCRIPTION = "Serve duplicate detection over HTTP: search, check, add, delete and groups as a JSON API."


@dataclass
class ServeArguments:
    """Flags of `hfsiamese serve`."""

    index_dir: str = field(metadata={"help": "Folder of a saved DuplicateIndex (its rows there, or in its database)."})
    model_name_or_path: str = field(metadata={"help": "Folder (or Hub id) of the Siamese model that built the index."})
    backend: str | None = field(
        default=None,
        metadata={
            "help": RUNTIME_HELP,
            "choices": RUNTIMES,
        },
    )
    host: str = field(default="127.0.0.1", metadata={"help": "Address to bind (127.0.0.1: this machine only)."})
    port: int = field(default=8000, metadata={"help": "Port to serve on."})
    api_keys_file: str | None = field(
        default=None, metadata={"help": "File of API keys, one 'read:KEY' or 'write:KEY' a line."}
    )
    allow_no_keys: bool = field(
        default=False, metadata={"help": "Serve anyone without a key, even beyond loopback (behind your own gateway)."}
    )
    read_only: bool = field(default=False, metadata={"help": "Refuse adds and deletes (403)."})
    find_groups: bool = field(
        default=False,
        metadata={"help": "Group the index's questions at start when it has no duplicate groups yet."},
    )
    cross_encoder: str | None = field(
        default=None,
        metadata={"help": "Folder of a trained cross-encoder: reranks searches and decides pair checks."},
    )
    rerank_k: int | None = field(
        default=None, metadata={"help": "Candidates per search the cross-encoder reranks (default: max(2k, 20))."}
    )
    k: int = field(default=5, metadata={"help": "Matches per query when a request gives no k."})
    max_k: int = field(default=100, metadata={"help": "Largest k a request may ask for."})
    max_batch: int = field(default=64, metadata={"help": "Most queries, pairs, questions or ids in one request."})
    max_chars: int = field(default=DEFAULT_MAX_CHARS, metadata={"help": "Longest text accepted, in characters."})
    max_request_bytes: int = field(default=1_048_576, metadata={"help": "Largest request body, in bytes."})
    batch_wait_ms: float = field(
        default=10.0,
        metadata={
            "help": "How long a search may wait for concurrent ones to be encoded with it: while searches come "
            "together, for as many as the last batch held, no longer (a lone one never waits)."
        },
    )
    batch_max_texts: int = field(default=64, metadata={"help": "Most texts encoded in one batch."})
    onnx_thread_spinning: bool = field(
        default=False,
        metadata={
            "help": "Let an ONNX model's onnxruntime threads spin between batches (onnxruntime's default); "
            "off (hfsiamese's default), they leave the cores to the requests between batches."
        },
    )
    replica: bool = field(
        default=False,
        metadata={"help": "Serve as a read replica of the writer that serves the same database index (read-only)."},
    )
    replica_refresh_s: float = field(
        default=1.0,
        metadata={"help": "A replica reopens its index this often, in seconds, to see the writer's writes."},
    )
    mount_app: str | None = field(
        default=None,
        metadata={"help": "Also serve the `hfsiamese app` page under this path (e.g. /app), behind the same keys."},
    )
    log_level: str = field(
        default="info",
        metadata={"help": "uvicorn's log level.", "choices": ("critical", "error", "warning", "info", "debug")},
    )


# Paths the service's own routes take: a page mounted there would hide them.
_SERVICE_PATHS = ("/v1", "/health", "/metrics", "/docs", "/openapi.json", "/redoc")


def check_mount_path(args: ServeArguments) -> None:
    """`--mount_app` names a path of its own, on a writer (a replica's index is reopened under the page)."""
    path = args.mount_app
    if path is None:
        return
    if not path.startswith("/") or path.rstrip("/") == "" or any(c in path for c in "?# "):
        raise UsageError(f"--mount_app {path!r} must be a path like /app")
    if any(path.rstrip("/") == taken or path.startswith(taken + "/") for taken in _SERVICE_PATHS):
        raise UsageError(f"--mount_app {path} is a path of the service's own routes: choose another, like /app")
    if args.replica:
        raise UsageError("--mount_app is served by the writer, not by a --replica")


def settings_of(args: ServeArguments) -> ServeSettings:
    """The flags as `ServeSettings` (a bad value said as a usage error)."""
    check_mount_path(args)
    if not (Path(args.index_dir) / INDEX_CONFIG_NAME).is_file():
        raise UsageError(
            f"--index_dir {args.index_dir} holds no saved index: build one with "
            "`hfsiamese search --corpus ... --index_dir ...` first"
        )
    try:
        return ServeSettings(
            index_dir=args.index_dir, model_name_or_path=args.model_name_or_path, backend=args.backend,
            cross_encoder=args.cross_encoder,
            rerank_k=args.rerank_k, default_k=args.k, read_only=args.read_only, find_groups=args.find_groups,
            host=args.host, port=args.port, api_keys_file=args.api_keys_file, allow_no_keys=args.allow_no_keys,
            limits=Limits(max_request_bytes=args.max_request_bytes, max_batch=args.max_batch,
                          max_chars=args.max_chars, max_k=args.max_k),
            batching=Batching(max_wait_ms=args.batch_wait_ms, max_batch=args.batch_max_texts),
            replica=args.replica, replica_refresh_s=args.replica_refresh_s,
            onnx_thread_spinning=args.onnx_thread_spinning,
        )  # fmt: skip
    except ValueError as err:
        raise UsageError(str(err)) from None


def import_server() -> tuple[Any, Any]:
    """uvicorn and the app factory (the `serve` extra), or an ImportError saying how to install them."""
    try:
        import uvicorn

        from hfsiamese.service.app import create_app
    except ImportError as err:
        raise ImportError(
            f"hfsiamese serve needs fastapi, uvicorn and prometheus-client: {install_hint('serve')}"
        ) from err
    return uvicorn, create_app


def main(argv: list[str] | None = None) -> None:
    """`hfsiamese serve --index_dir FOLDER --model_name_or_path MODEL`: serves until stopped."""
    parser = command_parser(ServeArguments, prog="hfsiamese serve", description=DESCRIPTION)
    (args,) = parse_config_and_flags(parser, argv)
    settings = settings_of(args)
    uvicorn, create_app = import_server()
    listening = bind_socket(args.host, args.port)
    configure_quiet_console()
    if args.mount_app is None:
        app = create_app(settings)
    else:  # the page is built over the loaded index: load it before serving
        from hfsiamese.cli.serve_page import mount_page
        from hfsiamese.service.service import DuplicateService

        loaded: list[DuplicateService] = []  # the service, loaded after the app's checks, before serving
        app = create_app(settings, opener=lambda: loaded[0])
        loaded.append(DuplicateService.open(settings))
        mount_page(app, loaded[0], args.mount_app)
    # A truncation warning for nearly every batch with a long question would be the whole log: the first is logged,
    # all are counted in /metrics (this command's process only; the app itself leaves warnings alone).
    truncation_log.install(app.state.runtime.metrics.count_truncated)
    print(f"Serving on http://{args.host}:{args.port} (ready once /health/ready answers 200)", flush=True)
    config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False)
    server = uvicorn.Server(config)
    server.run(sockets=[listening])
    if not server.started:  # the app's startup failed (its error is logged): as `uvicorn.run` exits
        raise SystemExit(3)


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
