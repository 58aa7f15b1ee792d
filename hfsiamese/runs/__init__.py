"""
A recipe run's plumbing, outside the Trainer: its command line (a config, then flags), one-line errors
(`run_recipe`), the output folder claimed
before any work (named, checked, locked against a second run, the launched processes counted), the CPU
threads, the console, the start every training recipe shares, and its end (saving, the summary printed).
"""

from .command_line import UsageError, run_recipe
from .config_and_flags import default_config_of, parse_config_and_flags
from .console import configure_quiet_console, configure_training_console
from .cpu_threads import apply_cpu_threads
from .run_end import end_run, save_run
from .run_folder import claim_output_dir
from .run_start import StartedCrossEncoderRun, StartedRun, refuse_bi_encoder_losses, start_cross_encoder_run, start_run

__all__ = [
    "StartedCrossEncoderRun",
    "StartedRun",
    "UsageError",
    "apply_cpu_threads",
    "claim_output_dir",
    "configure_quiet_console",
    "configure_training_console",
    "default_config_of",
    "end_run",
    "parse_config_and_flags",
    "run_recipe",
    "refuse_bi_encoder_losses",
    "save_run",
    "start_cross_encoder_run",
    "start_run",
]
