"""`hfsiamese app`: a duplicate-search web app for your corpus: "has this question already been asked?" (Gradio).

    hfsiamese app --model_name_or_path outputs/lstm_qqp --corpus questions.txt
    hfsiamese app --model_name_or_path outputs/lstm_qqp --corpus questions.txt --index_dir outputs/my_index
    hfsiamese app --model_name_or_path outputs/lstm_qqp --index_dir outputs/my_index --port 8080
    hfsiamese app --model_name_or_path outputs/lstm_qqp --index_dir outputs/my_index \\
        --cross_encoder outputs/cross_minilm_qqp       # the cross-encoder reranks and decides
    hfsiamese app --model_name_or_path outputs/lstm_qqp --index_dir outputs/my_index --backend auto
                                                       # the fastest runtime the model folder carries

Then open http://127.0.0.1:7860. It binds 127.0.0.1 (this machine only) unless --host says
otherwise. The corpus formats are those of `hfsiamese search`; --index_dir loads a saved index, or
saves the one built from --corpus there; --cross_encoder reranks each search's --rerank_k candidates
(default max(2k, 20)) and decides with its own scores and threshold, in both tabs. Needs
gradio (`pip install -e ".[app]"` from a clone).
"""

from __future__ import annotations

from hfsiamese.cli.app_page import AppArguments, app_from_arguments
from hfsiamese.cli.command_line import run_recipe
from hfsiamese.cli.command_parser import command_parser
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.cli.listening import check_port_free
from hfsiamese.cpu_policy import apply_command_defaults
from hfsiamese.utils.console import configure_quiet_console

DESCRIPTION = 'A duplicate-search web app for your corpus: "has this question already been asked?" (Gradio).'


def main(argv: list[str] | None = None) -> None:
    """`hfsiamese app --model_name_or_path MODEL --corpus QUESTIONS [--index_dir FOLDER]`: serves until stopped."""
    parser = command_parser(AppArguments, prog="hfsiamese app", description=DESCRIPTION)
    (args,) = parse_config_and_flags(parser, argv)
    check_port_free(args.host, args.port)  # Gradio said "Cannot find empty port" only after the corpus was embedded
    configure_quiet_console()
    app = app_from_arguments(args)
    print(f"Serving on http://{args.host}:{args.port}", flush=True)
    app.launch(server_name=args.host, server_port=args.port, show_error=False, quiet=True)


if __name__ == "__main__":
    apply_command_defaults()  # the commands' measured CPU defaults (hfsiamese.cpu_policy)
    run_recipe(main)
