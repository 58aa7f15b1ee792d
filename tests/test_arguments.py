from dataclasses import dataclass, field

import pytest
from transformers import HfArgumentParser

from hfsiamese.cli_args import parse_config_and_flags
from hfsiamese.output_dirs import ensure_writable_output_dir


@dataclass
class Args:
    name: str = field(metadata={"help": "required"})
    steps: int = 10
    rate: float = 0.1
    flag: bool = False


def test_yaml_values_with_flags_overriding(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("name: from_yaml\nsteps: 5\nflag: true\n")
    (args,) = parse_config_and_flags(HfArgumentParser(Args), [str(config), "--steps", "7"])
    assert (args.name, args.steps, args.rate, args.flag) == ("from_yaml", 7, 0.1, True)


def test_json_config_and_default_config(tmp_path):
    config = tmp_path / "c.json"
    config.write_text('{"name": "from_json", "rate": 0.5}')
    (args,) = parse_config_and_flags(HfArgumentParser(Args), [], default_config=config)
    assert (args.name, args.rate) == ("from_json", 0.5)


@pytest.mark.parametrize(
    "text,error,message",
    [("nmae: x\n", ValueError, "nmae"), ("- a\n- b\n", ValueError, "mapping"), ("a: [\n", ValueError, "cannot parse")],
)
def test_bad_configs(tmp_path, text, error, message):
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    with pytest.raises(error, match=message):
        parse_config_and_flags(HfArgumentParser(Args), [str(config)])


def test_missing_config_and_wrong_suffix(tmp_path):
    with pytest.raises(FileNotFoundError):
        parse_config_and_flags(HfArgumentParser(Args), [str(tmp_path / "none.yaml")])
    with pytest.raises(ValueError, match="config file"):
        parse_config_and_flags(HfArgumentParser(Args), ["config.txt"])


def test_output_dir_guard(tmp_path):
    ensure_writable_output_dir(tmp_path / "new")  # absent: fine
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "weights").write_text("x")
    with pytest.raises(FileExistsError, match="not empty"):
        ensure_writable_output_dir(tmp_path / "full")
    ensure_writable_output_dir(tmp_path / "full", overwrite=True)
    ensure_writable_output_dir(tmp_path / "full", resuming=True)
    with pytest.raises(FileExistsError, match="not a folder"):
        ensure_writable_output_dir(tmp_path / "full" / "weights")
