"""Other libraries' interfaces to hfsiamese models: MTEB's benchmark (`to_mteb`, and your own pairs as MTEB tasks).
Each imports its library only when used, so that it stays an optional extra."""

from hfsiamese.utils.lazy_exports import lazy_package

__getattr__, __dir__, __all__ = lazy_package(
    __name__,
    {
        ".mteb": ("MtebBiEncoder", "MtebCrossEncoder", "to_mteb"),
        ".mteb_tasks": ("pair_classification_task", "retrieval_task"),
    },
)
