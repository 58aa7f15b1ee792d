"""`CoreSharingCallback`: a CPU run gives up threads while another process keeps its cores busy.

The trainers add it (`SiameseTrainingArguments.share_cores`: unset follows the process's policy, on in hfsiamese's
commands, off in a user's script unless `hfsiamese.set_cpu_policy(share_cores=True)`); the adapting itself is
`hfsiamese.utils.core_sharing.CoreSharing`, which `encode` uses too. The Trainer's loop is the only
place that runs between steps on the thread that runs the kernels, hence a callback.
"""

from __future__ import annotations

import logging
from typing import Any

from transformers import TrainerCallback

import hfsiamese.cpu_policy as cpu_policy
from hfsiamese.utils import core_sharing
from hfsiamese.utils.cpu_threads import threads_set_by_user

logger = logging.getLogger(__name__)


def share_cores_verdict(args: Any) -> tuple[bool, str]:
    """Whether a run with these training arguments adapts its threads, and why (one phrase for the log)."""
    given = getattr(args, "share_cores", None)
    if given is False:
        return False, "--share_cores false"
    if given is None and not cpu_policy.current_policy()["share_cores"]:
        return (
            False,
            "a library run keeps torch's threads (hfsiamese.set_cpu_policy(share_cores=True) or share_cores=True opts in)",
        )
    if args.device.type != "cpu":
        return False, f"training on {args.device.type}"
    if getattr(args, "num_threads", None) is not None or threads_set_by_user():
        return False, "thread count chosen by the user"
    if args.full_determinism:
        return False, "full_determinism (a float reduction depends on the thread count)"
    if not core_sharing.available():  # not enabled(): that holds the previous run's verdict
        return False, f"{core_sharing.OPT_OUT}=0 or no {core_sharing.CPU_TIMES}"
    return True, "fewer threads while other processes use this run's cores"


class CoreSharingCallback(TrainerCallback):
    """Adapts torch's thread count at every step end; puts it back when training ends."""

    def __init__(self) -> None:
        self.sharing: core_sharing.CoreSharing | None = None
        self._before: dict[str, object] = {}

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        on, reason = share_cores_verdict(args)
        self._before = core_sharing.configured()
        core_sharing.configure(on, reason)  # evaluation's encode calls follow the same verdict, until the run ends
        if args.process_index == 0:
            logger.info("core sharing: %s (%s)", "on" if on else "off", reason)
        self.sharing = core_sharing.CoreSharing() if on else None

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.sharing is not None:
            self.sharing.update()

    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.sharing is not None:  # evaluation batches too: an evaluation can outlast many steps
            self.sharing.update()

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        core_sharing.restore_configuration(self._before)  # the process's own policy again
        if self.sharing is not None:
            self.sharing.restore()
            if self.sharing.changes and args.process_index == 0:
                logger.info("core sharing: %s", self.sharing.describe())
            self.sharing = None
