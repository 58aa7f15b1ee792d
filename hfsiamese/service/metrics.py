"""
Prometheus metrics of one service, in a registry of its own (two apps in one process never share counters):
requests by route and status, their latency, the batch sizes of the model calls, the index's size and the texts cut
at the model's token limit, served at `/metrics` in Prometheus' text format. Needs `prometheus-client` (the `serve` extra).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hfsiamese.utils.extras import install_hint

# Latency buckets (seconds): a search takes milliseconds; a write to a database or a saved folder longer.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def import_prometheus() -> Any:
    try:
        import prometheus_client
    except ImportError as err:
        raise ImportError(f"hfsiamese serve needs prometheus-client: {install_hint('serve')}") from err
    return prometheus_client


class ServiceMetrics:
    """The service's counters, histograms and gauge; `render()` is the `/metrics` page."""

    def __init__(self) -> None:
        prometheus = import_prometheus()
        self._prometheus = prometheus
        self.registry = prometheus.CollectorRegistry()
        self.requests = prometheus.Counter(
            "hfsiamese_requests", "HTTP requests answered, by route and status.", ["method", "route", "status"],
            registry=self.registry,
        )  # fmt: skip
        self.latency = prometheus.Histogram(
            "hfsiamese_request_seconds", "Time to answer a request, by route.", ["method", "route"],
            buckets=LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.batch_size = prometheus.Histogram(
            "hfsiamese_batch_size", "Texts (queries or pairs) per model call, by kind.", ["kind"],
            buckets=BATCH_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.index_size = prometheus.Gauge("hfsiamese_index_size", "Questions in the index.", registry=self.registry)
        self.truncated_texts = prometheus.Counter(
            "hfsiamese_truncated_texts", "Texts (pairs, for a cross-encoder) cut at the model's token limit.",
            registry=self.registry,
        )  # fmt: skip

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def count_truncated(self, texts: int) -> None:
        """`texts` more were cut at the model's token limit (`service.truncation_log`)."""
        self.truncated_texts.inc(texts)

    def batch_observer(self, kind: str) -> Callable[[int], None]:
        """What a batcher calls with each batch's size."""
        histogram = self.batch_size.labels(kind)
        return lambda size: histogram.observe(size)

    def watch_index_size(self, size: Callable[[], int]) -> None:
        """The gauge reads the index's size when scraped."""
        self.index_size.set_function(size)

    def render(self) -> tuple[bytes, str]:
        """The page and its content type."""
        return self._prometheus.generate_latest(self.registry), self._prometheus.CONTENT_TYPE_LATEST


__all__ = ["BATCH_BUCKETS", "LATENCY_BUCKETS", "ServiceMetrics", "import_prometheus"]
