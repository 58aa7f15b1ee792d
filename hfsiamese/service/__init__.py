"""
`hfsiamese serve`: duplicate detection over HTTP (FastAPI + uvicorn, the `serve` extra). `create_app` builds the
ASGI app over a saved `DuplicateIndex`; `ServiceClient` calls it from Python. The modules: `settings` (what a
service is told), `schemas` (the JSON), `auth` (API keys), `batching` (dynamic batches, one writer), `service`
(the index's operations), `metrics` (Prometheus), `errors` (JSON errors, body limit), `app` (the routes),
`page_sign_in` (a person's sign-in to the mounted page).
"""

from __future__ import annotations

from typing import Any

from hfsiamese.service.settings import Batching, Limits, ServeSettings

__all__ = ["Batching", "Limits", "ServeSettings", "ServiceClient", "create_app"]


def __getattr__(name: str) -> Any:
    """`create_app` and `ServiceClient` imported when first used (fastapi / httpx are optional)."""
    if name == "create_app":
        from hfsiamese.service.app import create_app

        return create_app
    if name == "ServiceClient":
        from hfsiamese.service.client import ServiceClient

        return ServiceClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
