"""
API keys of the service. Each key has a kind: `read` (search, check, groups) or `write` (also add and delete).

Keys come from a file (`--api_keys_file`: one `KIND:KEY` a line, `#` comments and blank lines skipped) and from the
environment variable `HFSIAMESE_API_KEYS` (`KIND:KEY` entries separated by commas), read when the service starts
(never written). A request gives its key as `Authorization: Bearer KEY` or `X-API-Key: KEY`. With keys, every
`/v1` route needs one (401 without, 403 for a read key on a write route); without keys the service answers anyone,
which it only allows when it listens on loopback. A person's browser sends no such header: on the page that
`--mount_app` mounts, a person signs in with a key instead (`page_sign_in`). The resulting session opens that page
only, never a `/v1` route.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

KeyKind = Literal["read", "write"]
KEY_KINDS: tuple[KeyKind, ...] = ("read", "write")
ENV_VARIABLE = "HFSIAMESE_API_KEYS"
# Shorter keys are guessable: refused when read.
MIN_KEY_LENGTH = 16


class AuthError(Exception):
    """A request without a valid key (`status` 401) or with a key of too weak a kind (403)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ApiKeys:
    """The service's keys and their kinds; `check` says whether a request's key may use a route of a kind."""

    def __init__(self, keys: Mapping[str, KeyKind] | None = None) -> None:
        self._keys: dict[str, KeyKind] = dict(keys or {})

    @classmethod
    def load(cls, path: str | os.PathLike | None = None, environ: Mapping[str, str] | None = None) -> ApiKeys:
        """The keys of the file at `path` and of `HFSIAMESE_API_KEYS` in `environ` (default: the process's)."""
        keys: dict[str, KeyKind] = {}
        if path is not None:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines, start=1):
                line = line.strip()
                if line and not line.startswith("#"):
                    kind, key = parse_entry(line, f"{path} line {number}")
                    keys[key] = kind
        environ = os.environ if environ is None else environ
        for entry in filter(None, (part.strip() for part in environ.get(ENV_VARIABLE, "").split(","))):
            kind, key = parse_entry(entry, ENV_VARIABLE)
            keys[key] = kind
        return cls(keys)

    @property
    def enabled(self) -> bool:
        return bool(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def kind_of(self, key: str) -> KeyKind | None:
        """The kind of `key`, None for an unknown one (compared in constant time with every key)."""
        found: KeyKind | None = None
        for known, kind in self._keys.items():
            if hmac.compare_digest(known.encode(), key.encode()):
                found = kind
        return found

    def check(self, key: str | None, needed: KeyKind) -> None:
        """Raise `AuthError` unless `key` may use a route that needs `needed` (nothing to check without keys)."""
        if not self._keys:
            return
        if not key:
            raise AuthError(401, "this service needs an API key: send 'Authorization: Bearer KEY' or 'X-API-Key: KEY'")
        kind = self.kind_of(key)
        if kind is None:
            raise AuthError(401, "unknown API key")
        if needed == "write" and kind != "write":
            raise AuthError(403, "this API key is read-only: adding and deleting questions needs a write key")


def parse_entry(entry: str, where: str) -> tuple[KeyKind, str]:
    """`read:KEY` or `write:KEY` as (kind, key), refused with a message naming `where`."""
    kind, sep, key = entry.partition(":")
    kind, key = kind.strip(), key.strip()
    if not sep or kind not in KEY_KINDS:
        raise ValueError(f"{where}: an API key entry is 'read:KEY' or 'write:KEY'")
    if len(key) < MIN_KEY_LENGTH or any(c.isspace() for c in key):
        raise ValueError(f"{where}: an API key must be at least {MIN_KEY_LENGTH} characters, without spaces")
    return kind, key


def request_key(authorization: str | None, x_api_key: str | None) -> str | None:
    """The key a request sent: `X-API-Key`, else the token of `Authorization: Bearer`."""
    if x_api_key:
        return x_api_key.strip()
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    return None


__all__ = [
    "ENV_VARIABLE",
    "KEY_KINDS",
    "MIN_KEY_LENGTH",
    "ApiKeys",
    "AuthError",
    "KeyKind",
    "parse_entry",
    "request_key",
]
