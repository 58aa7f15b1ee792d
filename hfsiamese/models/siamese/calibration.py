"""
`model.calibrate(...)`: moving a trained model's decision to a new domain from a few labelled pairs of it.

Applying a stored calibration needs nothing but this folder (`score_calibrator.py`); fitting one needs
scikit-learn and hfsiamese's threshold search, which do not travel with a checkpoint. So the method is
here, with every model, and the fitting is imported from the installed library when it is called:
where hfsiamese is not installed (a checkpoint loaded with `trust_remote_code=True`), calibrating says
so in one line while the stored calibration is still applied.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

__all__ = ["CalibrationMixin"]


class CalibrationMixin:
    """`model.calibrate(...)` (mixed into `SiameseModel`): the fitting needs hfsiamese, applying it does not."""

    def calibrate(
        self,
        pairs: Any,
        labels: Sequence[int] | None = None,
        *,
        method: str = "threshold",
        calibrate_for: str = "accuracy",
        target_precision: float | None = None,
        **kwargs: Any,
    ) -> Any:
        """
        Move the decision to a new domain from a few labelled pairs of it (about 50 or more), without
        retraining: `method="threshold"` moves `config.threshold` (for `calibrate_for` "accuracy", "f1", or
        "precision" with `target_precision`); `"platt"` and `"isotonic"` also store a map from score to
        P(duplicate) in `config.calibration`, so that predictions carry a `probability` and thresholds
        can be given as probabilities. `pairs`: `(text_a, text_b)` tuples with `labels`, or a
        `datasets.Dataset` of `question1`, `question2`, `label` (as `hfsiamese.data.load_pairs` gives).
        Other keyword arguments go to `hfsiamese.calibration_fitting.calibrate_model` (`tokenizer`,
        `data_name`, `num_bootstrap`, `seed`, `batch_size`, `max_length`). Returns a `CalibrationReport`.
        `target=` is the old name of `calibrate_for` (kept for one release, with a FutureWarning).
        """
        if "target" in kwargs:
            warnings.warn(
                "model.calibrate(target=...) is renamed calibrate_for=..., as the commands' --calibrate_for; "
                "target= goes in hfsiamese 0.3 (hfsiamese.utils.deprecation.REMOVED_IN)",
                FutureWarning,
                stacklevel=2,
            )
            calibrate_for = kwargs.pop("target")
        # Reaches the installed library, only when called (as hub_sharing's card generator does). The fitting
        # imports `score_calibrator.py`, never this file, so the two do not import each other.
        try:
            from hfsiamese.calibration_fitting import calibrate_model
        except ImportError as err:
            raise ImportError(
                "model.calibrate fits with hfsiamese and scikit-learn: "
                "pip install git+https://github.com/hfsiamese/hfsiamese (a stored calibration is applied without them)"
            ) from err
        return calibrate_model(
            self, pairs, labels, method=method, calibrate_for=calibrate_for, target_precision=target_precision, **kwargs
        )
