"""The socket a serving command listens on, bound before anything loads, so that a port in use is said at once."""

from __future__ import annotations

import errno
import socket

from hfsiamese.cli.command_line import UsageError

__all__ = ["bind_socket", "check_port_free"]


def bind_socket(host: str, port: int) -> socket.socket:
    """
    A socket bound to `host:port` (not yet listening), or a one-line usage error: `hfsiamese serve` binds it before the
    model and the index load and hands it to uvicorn, which otherwise binds only once the app has started, so a port
    in use (or a host that is no address) was said after the whole load, as a log line (or a traceback).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (OSError, UnicodeError) as err:  # socket.gaierror, or the IDNA codec's error for a malformed name
        raise UsageError(f"--host {host} is no address to listen on: {err}") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn sets it: a restart reuses the port
    try:
        sock.bind(address)
    except OSError as err:
        sock.close()
        if err.errno == errno.EADDRINUSE:
            raise UsageError(
                f"port {port} on {host} is in use (another service?): stop it or pass another --port"
            ) from None
        raise UsageError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    sock.set_inheritable(True)
    return sock


def check_port_free(host: str, port: int) -> None:
    """Refuses a port in use, or a host that is no address, before the corpus is embedded: for a server that binds its
    own socket later (Gradio's `launch`), which can only be asked, not handed the socket."""
    bind_socket(host, port).close()
