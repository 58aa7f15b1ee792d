"""`hfsiamese serve`'s refusals before it serves, the API keys it reads, and the app's guard beyond loopback."""

from __future__ import annotations

import pytest

from hfsiamese.cli import main as cli_main
from hfsiamese.service.auth import ENV_VARIABLE, ApiKeys, AuthError, request_key
from hfsiamese.service.settings import Limits, ServeSettings, is_loopback
from tests.service.running_service import free_port

GOOD = "k" * 20


def test_serve_is_a_command_and_refuses_a_folder_without_an_index(tmp_path, capsys):
    assert "serve" in cli_main.COMMANDS
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main(["serve", "--index_dir", str(tmp_path), "--model_name_or_path", str(tmp_path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "holds no saved index" in err and len(err.splitlines()) == 1


def test_serving_beyond_loopback_needs_keys():
    from hfsiamese.service.app import create_app

    settings = ServeSettings(index_dir="i", model_name_or_path="m", host="0.0.0.0")
    with pytest.raises(ValueError, match="needs API keys: pass --api_keys_file or set HFSIAMESE_API_KEYS"):
        create_app(settings, keys=ApiKeys())
    create_app(settings, keys=ApiKeys({GOOD: "read"}))  # with a key
    create_app(ServeSettings(index_dir="i", model_name_or_path="m", host="0.0.0.0", allow_no_keys=True), keys=ApiKeys())
    create_app(ServeSettings(index_dir="i", model_name_or_path="m"), keys=ApiKeys())  # loopback


def test_loopback_hosts():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2") and not is_loopback("example.com")


def test_keys_from_a_file_and_the_environment(tmp_path):
    path = tmp_path / "keys.txt"
    path.write_text(f"# comment\n\nread:{'r' * 16}\nwrite:{'w' * 16}\n", encoding="utf-8")
    keys = ApiKeys.load(path, environ={ENV_VARIABLE: f"read:{GOOD}, write:{'x' * 16}"})
    assert len(keys) == 4
    assert keys.kind_of("r" * 16) == "read" and keys.kind_of("x" * 16) == "write" and keys.kind_of("nope") is None
    keys.check("w" * 16, "write")
    keys.check("r" * 16, "read")
    with pytest.raises(AuthError, match="read-only") as weak:
        keys.check("r" * 16, "write")
    assert weak.value.status == 403
    for key in (None, "", "unknown-key-000000"):
        with pytest.raises(AuthError) as missing:
            keys.check(key, "read")
        assert missing.value.status == 401
    ApiKeys().check(None, "write")  # no keys: anyone


@pytest.mark.parametrize("entry, said", [("admin:" + GOOD, "'read:KEY' or 'write:KEY'"), (GOOD, "'read:KEY'"),
                                         ("read:short", "at least 16 characters")])  # fmt: skip
def test_a_bad_key_entry_names_where_it_is(tmp_path, entry, said):
    path = tmp_path / "keys.txt"
    path.write_text(f"read:{GOOD}\n{entry}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"keys.txt line 2: .*{said}"):
        ApiKeys.load(path, environ={})


def test_the_key_a_request_sent():
    assert request_key(None, " abc ") == "abc" and request_key("Bearer tok", None) == "tok"
    assert request_key("Basic tok", None) is None and request_key(None, None) is None


def test_settings_refuse_impossible_limits():
    with pytest.raises(ValueError, match="max_k must be at least 1"):
        Limits(max_k=0)
    with pytest.raises(ValueError, match="default k"):
        ServeSettings(index_dir="i", model_name_or_path="m", default_k=50, limits=Limits(max_k=10))


@pytest.mark.parametrize("port", [0, 65536, 99999, -1])
def test_a_port_no_socket_can_have_is_refused(port):
    with pytest.raises(ValueError, match=f"port must be an integer from 1 to 65535, got {port}"):
        ServeSettings(index_dir="i", model_name_or_path="m", port=port)
    assert ServeSettings(index_dir="i", model_name_or_path="m", port=65535).port == 65535


def test_rerank_k_without_a_cross_encoder_is_refused_not_ignored():
    with pytest.raises(ValueError, match="rerank_k applies only with a cross_encoder"):
        ServeSettings(index_dir="i", model_name_or_path="m", rerank_k=20)
    assert ServeSettings(index_dir="i", model_name_or_path="m", cross_encoder="ce", rerank_k=20).rerank_k == 20


@pytest.mark.parametrize(
    ("rerank_k", "message"),
    [(0, "rerank_k must be an integer of at least 1, got 0"), (3, r"rerank_k \(3\) must be at least k \(5\)")],
)
def test_a_rerank_k_that_fails_every_default_search_is_refused_at_start(rerank_k, message):
    # the service started with it and answered every search of the default k with a 422
    with pytest.raises(ValueError, match=message):
        ServeSettings(index_dir="i", model_name_or_path="m", cross_encoder="ce", rerank_k=rerank_k)
    assert ServeSettings(index_dir="i", model_name_or_path="m", cross_encoder="ce", rerank_k=5).rerank_k == 5


def test_serve_logs_the_first_truncation_and_counts_every_one_in_its_metrics(tmp_path, monkeypatch, recwarn):
    import warnings

    from hfsiamese.cli import serve
    from hfsiamese.models.siamese.token_fields import warn_truncated
    from hfsiamese.service.app import create_app
    from hfsiamese.service.truncation_log import TruncationLog

    (tmp_path / "index_config.json").write_text("{}")  # the command's check; the stub below never loads it
    served = {}

    class Uvicorn:  # what the command runs the app with: here, two batches of long questions, then it stops
        class Config:
            def __init__(self, app, **options):
                self.app = app

        class Server:
            def __init__(self, config):
                self.config, self.started = config, False

            def run(self, sockets):
                served["app"], served["sockets"] = self.config.app, sockets
                warn_truncated(2, 10, 48)
                warn_truncated(2, 10, 48)
                self.started = True

    monkeypatch.setattr(serve, "import_server", lambda: (Uvicorn, create_app))
    port = free_port()
    with warnings.catch_warnings():  # the command's hook stays inside this block
        serve.main(["--index_dir", str(tmp_path), "--model_name_or_path", str(tmp_path), "--port", str(port)])
        assert isinstance(warnings.showwarning, TruncationLog)
    assert served["sockets"][0].getsockname()[1] == port  # bound by the command before the app was made
    served["sockets"][0].close()
    metrics = served["app"].state.runtime.metrics.render()[0].decode()
    assert "hfsiamese_truncated_texts_total 4.0" in metrics
    (shown,) = [str(warning.message) for warning in recwarn if "were truncated" in str(warning.message)]
    assert shown.startswith("2 of 10 texts") and "hfsiamese_truncated_texts_total" in shown


def test_a_port_in_use_is_said_in_one_line_before_the_model_or_the_index_loads(tmp_path, capsys):
    import socket

    (tmp_path / "index_config.json").write_text("{}")  # passes the command's check; nothing here could load
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exit_info:
            cli_main.main(["serve", "--index_dir", str(tmp_path), "--model_name_or_path", str(tmp_path / "none"),
                           "--port", str(port)])  # fmt: skip
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: port {port} on 127.0.0.1 is in use (another service?): stop it or pass another --port"


def test_a_host_that_is_no_address_is_said_in_one_line(tmp_path, capsys):
    (tmp_path / "index_config.json").write_text("{}")
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main(["serve", "--index_dir", str(tmp_path), "--model_name_or_path", str(tmp_path),
                       "--host", "bad..host", "--allow_no_keys"])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and err.startswith("error: --host bad..host is no address to listen on")
    assert len(err.splitlines()) == 1
