"""Other libraries' interfaces to hfsiamese models: MTEB's benchmark (`to_mteb`, and your own pairs as MTEB tasks).
Each imports its library only when used, so that it stays an optional extra."""

from hfsiamese.utils.lazy_exports import lazy_exports

_EXPORTS = {
    "MtebBiEncoder": "hfsiamese.integrations.mteb",
    "MtebCrossEncoder": "hfsiamese.integrations.mteb",
    "to_mteb": "hfsiamese.integrations.mteb",
    "pair_classification_task": "hfsiamese.integrations.mteb_tasks",
    "retrieval_task": "hfsiamese.integrations.mteb_tasks",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
__all__ = list(_EXPORTS)
