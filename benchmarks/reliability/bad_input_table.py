#!/usr/bin/env python
"""
Run every row of the bad-input table (tests/data/test_bad_inputs.py) and print it as markdown,
with the message each input actually gets.

    HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 python benchmarks/reliability/bad_input_table.py > table.md

The rows live in the test module, so the docs table and the tests cannot drift apart.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository: `benchmarks.*` imports
from benchmarks.common.harness import argument_parser, markdown_table

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def main(argv: list[str] | None = None) -> None:
    argument_parser(__doc__).parse_args(argv)
    import datasets
    import transformers

    from tests.data.test_bad_inputs import CASES, observe

    datasets.disable_progress_bars()
    transformers.utils.logging.set_verbosity_error()
    warnings.simplefilter("ignore")
    rows = []
    for case in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            with contextlib.redirect_stdout(io.StringIO()):  # the Trainer prints its logs
                seen = observe(case, Path(tmp))
            message = seen.message.replace(tmp, "<tmp>")
        if seen.error is not None:
            observed = f"`{seen.error.__name__}`: {message}"
            ok = case.raises is not None and issubclass(seen.error, case.raises)
        else:
            observed = "; ".join(
                part for part in (f"warning: {message}" if message else "", seen.summary or "") if part
            )
            ok = case.raises is None and (case.message is None or bool(message))
        if not ok:
            observed = f"**UNEXPECTED** {observed}"
        rows.append((_cell(case.input), _cell(case.behaviour), _cell(observed)))
    print("\n".join(markdown_table(("Input", "Behaviour", "Observed"), rows)))


if __name__ == "__main__":
    main()
