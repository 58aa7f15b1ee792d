from dataclasses import dataclass, field

import pytest

from hfsiamese.cli.command_parser import command_parser
from hfsiamese.cli.config_and_flags import parse_config_and_flags
from hfsiamese.training.arguments import DataArguments, ModelArguments, model_card_kwargs


@dataclass
class Args:
    name: str = field(metadata={"help": "required"})
    steps: int = 10
    rate: float = 0.1
    flag: bool = False


def test_yaml_values_with_flags_overriding(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("name: from_yaml\nsteps: 5\nflag: true\n")
    (args,) = parse_config_and_flags(command_parser(Args, prog="test"), [str(config), "--steps", "7"])
    assert (args.name, args.steps, args.rate, args.flag) == ("from_yaml", 7, 0.1, True)


def test_json_config_and_default_config(tmp_path):
    config = tmp_path / "c.json"
    config.write_text('{"name": "from_json", "rate": 0.5}')
    (args,) = parse_config_and_flags(command_parser(Args, prog="test"), [], default_config=config)
    assert (args.name, args.rate) == ("from_json", 0.5)


@pytest.mark.parametrize(
    "text,error,message",
    [("nmae: x\n", ValueError, "nmae"), ("- a\n- b\n", ValueError, "mapping"), ("a: [\n", ValueError, "cannot parse")],
)
def test_bad_configs(tmp_path, text, error, message):
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    with pytest.raises(error, match=message):
        parse_config_and_flags(command_parser(Args, prog="test"), [str(config)])


def test_missing_config_and_wrong_suffix(tmp_path):
    with pytest.raises(FileNotFoundError):
        parse_config_and_flags(command_parser(Args, prog="test"), [str(tmp_path / "none.yaml")])
    with pytest.raises(ValueError, match="config file"):
        parse_config_and_flags(command_parser(Args, prog="test"), ["config.txt"])


def test_model_card_kwargs_name_the_data_base_model_and_changed_arguments(tiny_bert_dir):
    lstm = model_card_kwargs(ModelArguments(embedding_dim=16), DataArguments())
    assert (lstm["dataset_tags"], lstm["language"], lstm["finetuned_from"], lstm["license"]) == (
        "quora",
        "en",
        None,
        "apache-2.0",
    )
    assert lstm["arguments"] == {"embedding_dim": 16}  # only what differs from the defaults

    hub = model_card_kwargs(
        ModelArguments(encoder_type="transformer", model_name_or_path=str(tiny_bert_dir)),
        DataArguments(dataset_name="nyu-mll/glue", dataset_config_name="qqp", split_seed=7),
    )
    assert (hub["dataset"], hub["dataset_tags"], hub["dataset_args"]) == ("nyu-mll/glue:qqp", "nyu-mll/glue", "qqp")
    assert hub["finetuned_from"] == str(tiny_bert_dir) and hub["license"] is None  # the folder declares none
    assert hub["arguments"] == {"encoder_type": "transformer", "model_name_or_path": str(tiny_bert_dir),
                                "dataset_name": "nyu-mll/glue", "dataset_config_name": "qqp", "split_seed": 7}  # fmt: skip
    assert model_card_kwargs(ModelArguments(), DataArguments(train_file="/data/pairs.csv"))["dataset"] == "pairs.csv"


def test_flags_are_never_abbreviated_and_mistakes_are_usage_errors():
    from hfsiamese.cli.command_line import UsageError

    @dataclass
    class Steps:
        max_steps: int = 1

    with pytest.raises(UsageError, match="unrecognized arguments: --max_step 5"):
        parse_config_and_flags(command_parser(Steps, prog="test"), ["--max_step", "5"])
    with pytest.raises(UsageError, match="invalid int value: 'many'"):
        parse_config_and_flags(command_parser(Steps, prog="test"), ["--max_steps", "many"])


def test_value_given_on_the_command_line_or_in_the_config(tmp_path):
    from hfsiamese.cli.config_and_flags import config_file_of, value_given

    config = tmp_path / "c.yaml"
    config.write_text("output_dir: somewhere\n")
    assert config_file_of([str(config), "--x", "1"], None) == str(config)
    assert config_file_of(["--x", "1"], "default.yaml") == "default.yaml"
    assert value_given("output_dir", [], config) and not value_given("max_steps", [], config)
    assert value_given("max_steps", ["--max_steps=3"], None) and not value_given("max_steps", ["--max_steps_x"], None)


def test_mining_top_k_is_the_old_name_of_mining_max_rank():
    with pytest.warns(
        FutureWarning, match=r"--mining_top_k is renamed --mining_max_rank; --mining_top_k goes in hfsiamese 0\.3"
    ):
        args = DataArguments(mining_top_k=7)
    assert args.mining_max_rank == 7 and args.mining_top_k == 7
    assert DataArguments(mining_max_rank=9).mining_top_k == 9
    with pytest.raises(ValueError, match="--mining_top_k \\(deprecated\\) and --mining_max_rank give different values"):
        DataArguments(mining_top_k=7, mining_max_rank=9)


@pytest.mark.parametrize("workers", [0, -2])
def test_preprocessing_workers_below_one_are_refused(workers):
    with pytest.raises(ValueError, match=f"preprocessing_num_workers must be at least 1 \\(or unset\\), got {workers}"):
        DataArguments(train_file="pairs.tsv", preprocessing_num_workers=workers)
    assert DataArguments(train_file="pairs.tsv", preprocessing_num_workers=1).preprocessing_num_workers == 1


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"max_train_pairs": 0}, r"max_train_pairs must be at least 1 \(or unset\), got 0"),
        ({"max_train_pairs": -5}, r"max_train_pairs must be at least 1 \(or unset\), got -5"),
        ({"split_seed": -1}, "split_seed must be a non-negative integer, got -1"),
    ],
)
def test_data_settings_no_run_can_use_are_refused_by_name(values, message):
    with pytest.raises(ValueError, match=message):
        DataArguments(train_file="pairs.tsv", **values)


@pytest.mark.parametrize("max_length", [0, -1])
def test_a_max_length_below_one_is_refused_before_any_data_is_read(max_length):
    with pytest.raises(ValueError, match=f"max_length must be a positive integer \\(or unset\\), got {max_length}"):
        ModelArguments(max_length=max_length)
    assert ModelArguments(max_length=8).max_length == 8 and ModelArguments().max_length is None


@pytest.mark.parametrize("name", ["dropout", "encoder_dropout", "lora_dropout"])
@pytest.mark.parametrize("value", [1.5, 1.0, -0.1])
def test_a_dropout_that_is_no_probability_is_refused_with_the_flags(name, value):
    # torch refused it once the model was built and the data read
    with pytest.raises(ValueError, match=f"^{name} is a probability in \\[0, 1\\), got {value}$"):
        ModelArguments(**{name: value})
    assert getattr(ModelArguments(**{name: 0.1}), name) == 0.1


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(mining_margin=5.0), "margin must be below 2"),
        (dict(mining_relative_margin=1.5), "relative_margin must be in"),
        (dict(mining_skip_top=50), "the rank window holds max_rank - skip_top = 0"),
    ],
)
def test_mining_options_are_checked_with_the_other_flags(options, message):
    # they were checked by the miner, after the model and the data were loaded
    with pytest.raises(ValueError, match=f"^--mining_\\* options: {message}"):
        DataArguments(train_file="pairs.tsv", train_view="mined_triplets", **options)
    assert DataArguments(train_file="pairs.tsv", mining_margin=-2.0, mining_relative_margin=None).mining_margin == -2.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"validation_fraction": 0.0}, "validation_fraction must be strictly between 0 and 1, got 0.0"),
        ({"validation_fraction": 0.5, "test_fraction": 0.5}, "test_fraction must be in"),
        ({"max_eval_pairs": -4}, r"max_eval_pairs must be 0 \(all pairs\) or more, got -4"),
    ],
)
def test_split_and_evaluation_sizes_are_checked_with_the_other_flags(options, message):
    # they were refused once the pairs were read and split, after the run had started
    with pytest.raises(ValueError, match=message):
        DataArguments(train_file="pairs.tsv", **options)
    # with a validation file nothing is split off: the fractions are not used
    assert DataArguments(train_file="pairs.tsv", validation_file="v.tsv", validation_fraction=0.0).validation_file
