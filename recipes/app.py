#!/usr/bin/env python
"""A duplicate-search web app for your corpus: "has this question already been asked?" (Gradio).

    python recipes/app.py --model_name_or_path outputs/lstm_qqp --corpus recipes/data/qqp_dev.tsv
    python recipes/app.py --model_name_or_path outputs/lstm_qqp --corpus questions.txt --index outputs/my_index
    python recipes/app.py --model_name_or_path outputs/lstm_qqp --index outputs/my_index --port 8080
    python recipes/app.py --model_name_or_path outputs/lstm_qqp --index outputs/my_index \\
        --cross_encoder outputs/cross_minilm_qqp       # the cross-encoder reranks and decides

Then open http://127.0.0.1:7860. It binds 127.0.0.1 (this machine only) unless --host says
otherwise. The corpus formats are those of recipes/search.py; --index loads a saved index, or
saves the one built from --corpus there; --cross_encoder reranks each search's --rerank_k candidates
(default max(2k, 20)) and decides with its own scores and threshold, in both tabs. Needs
`pip install "hfsiamese[app]"`.
"""

from __future__ import annotations

import hfsiamese  # first: in a command, picks OpenMP's wait policy before torch loads; registers the auto classes

# isort: split
from transformers import HfArgumentParser

from hfsiamese.runs import configure_quiet_console, parse_config_and_flags, run_recipe
from hfsiamese.search.app import AppArguments, app_from_arguments


def main(argv: list[str] | None = None) -> None:
    (args,) = parse_config_and_flags(HfArgumentParser(AppArguments), argv)
    configure_quiet_console()
    app = app_from_arguments(args)
    print(f"Serving on http://{args.host}:{args.port}", flush=True)
    app.launch(server_name=args.host, server_port=args.port, show_error=False, quiet=True)


if __name__ == "__main__":
    hfsiamese.apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy); a library call has none
    run_recipe(main)
