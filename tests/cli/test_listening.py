"""`hfsiamese.cli.listening`: the serving commands' socket, and a port in use said before anything loads."""

from __future__ import annotations

import socket

import pytest

from hfsiamese.cli import main as cli_main
from hfsiamese.cli.command_line import UsageError
from hfsiamese.cli.listening import bind_socket, check_port_free


def test_a_free_port_is_bound_and_a_taken_one_refused():
    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    sock.listen()
    with pytest.raises(UsageError, match=f"^port {port} on 127.0.0.1 is in use \\(another service\\?\\)"):
        check_port_free("127.0.0.1", port)
    sock.close()
    check_port_free("127.0.0.1", port)  # free again
    with pytest.raises(UsageError, match="--host bad..host is no address to listen on"):
        bind_socket("bad..host", port)


def test_the_app_says_a_port_in_use_before_it_reads_the_corpus(tmp_path, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        missing = tmp_path / "no-such-corpus.txt"  # read first, it would be the error
        with pytest.raises(SystemExit) as exit_info:
            cli_main.main(["app", "--model_name_or_path", str(tmp_path), "--corpus", str(missing), "--port", str(port)])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and err.startswith(f"error: port {port} on 127.0.0.1 is in use")
