"""
`ServiceClient`: the `hfsiamese serve` API from Python, a thin wrapper over `httpx` that returns the JSON as dicts
and raises `ServiceCallError` (status, code, message) for an error answer.

    >>> client = ServiceClient("http://127.0.0.1:8000", api_key="KEY")  # doctest: +SKIP
    >>> client.search("How do I learn Python?", k=3)["results"][0]["verdict"]  # doctest: +SKIP
    'duplicate'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hfsiamese.utils.extras import install_hint


class ServiceCallError(Exception):
    """An error answer of the service: its HTTP `status`, its `code` and its one-line `message`."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message = status, code, message


class ServiceClient:
    """Calls one service at `base_url` (with `api_key` where it needs one); use as a context manager or `close()`."""

    def __init__(self, base_url: str, *, api_key: str | None = None, timeout: float = 30.0) -> None:
        try:
            import httpx
        except ImportError as err:
            raise ImportError(f"the service client needs httpx: {install_hint('serve')}") from err
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)

    def _call(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._http.request(method, path, **kwargs)
        if response.status_code >= 400:
            try:
                error = response.json()["error"]
                code, message = str(error["code"]), str(error["message"])
            except (ValueError, KeyError, TypeError):
                code, message = "error", response.text[:200]
            raise ServiceCallError(response.status_code, code, message)
        return response.json() if response.content else None

    def search(
        self, queries: str | Sequence[str], k: int | None = None, *, filter: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """`{"results": [{"query", "verdict", "matches"}, ...]}`: one result per query; `filter` keeps the questions
        whose metadata match ({field: value} or {field: [values]}, an index in a database only)."""
        body: dict[str, Any] = {"query": queries} if isinstance(queries, str) else {"queries": list(queries)}
        if k is not None:
            body["k"] = k
        if filter is not None:
            body["filter"] = filter
        return self._call("POST", "/v1/search", json=body)

    def check(self, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """`{"results": [{"score", "probability", "is_duplicate", "verdict"}, ...]}`: one per pair."""
        return self._call("POST", "/v1/check", json={"pairs": [{"first": a, "second": b} for a, b in pairs]})

    def add(
        self,
        texts: Sequence[str],
        ids: Sequence[int | str],
        metadata: Sequence[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Store new questions: `{"added": [{"id", "group", "canonical_id", ...}], "size"}`."""
        questions = [{"id": i, "text": t} for i, t in zip(ids, texts, strict=True)]
        if metadata is not None:
            for question, values in zip(questions, metadata, strict=True):
                question["metadata"] = values
        return self._call("POST", "/v1/questions", json={"questions": questions})

    def delete(self, ids: Sequence[int | str]) -> dict[str, Any]:
        """`{"deleted", "size"}`."""
        return self._call("POST", "/v1/questions/delete", json={"ids": list(ids)})

    def group(self, group: int) -> dict[str, Any]:
        return self._call("GET", f"/v1/groups/{group}")

    def group_of(self, question_id: int | str) -> dict[str, Any]:
        return self._call("GET", f"/v1/questions/{question_id}/group")

    def largest_groups(self, n: int = 10) -> dict[str, Any]:
        return self._call("GET", "/v1/groups", params={"n": n})

    def info(self) -> dict[str, Any]:
        return self._call("GET", "/v1/info")

    def ready(self) -> bool:
        """Whether the service has loaded its index."""
        return self._http.get("/health/ready").status_code == 200

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


__all__ = ["ServiceCallError", "ServiceClient"]
