"""The CPU backends benchmark (benchmarks/serving/cpu_backends.py) on a tiny model and a few pairs: its rows and ratios."""

from __future__ import annotations

import pytest

from benchmarks.serving.cpu_backends import main, tokenizing_alone
from hfsiamese.bi_encoder.word_tokenizer import train_word_tokenizer
from tests.bi_encoder.test_onnx_export import tiny_model
from tests.conftest import TEXTS


def test_a_tiny_model_in_three_backends(tmp_path, capsys):
    tokenizer = train_word_tokenizer(TEXTS, vocab_size=100, model_max_length=16)
    model = tiny_model("static", len(tokenizer)).eval()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    rows = [f"{a}\t{b}\t{int(i % 2 == 0)}" for i, (a, b) in enumerate(zip(TEXTS[0::2], TEXTS[1::2], strict=True))]
    rows += [f"{a}\t{b}\t0" for a, b in zip(TEXTS[:4], TEXTS[4:], strict=True)]
    (tmp_path / "pairs.tsv").write_text("question1\tquestion2\tlabel\n" + "\n".join(rows) + "\n", encoding="utf-8")
    variants = ["pytorch_fp32", "onnx_fp32", "openvino_fp32"]
    result = main(
        ["--model", str(tmp_path / "model"), "--pairs_file", str(tmp_path / "pairs.tsv"), "--texts", "12",
         "--repeats", "1", "--variants", *variants, "--output_json", str(tmp_path / "out.json")]
    )  # fmt: skip
    assert result["texts"] == 12 and result["pairs"] == 8 and "skipped" not in result
    for name in variants:
        assert result[name]["texts_per_s"] > 0 and result[name]["pairs_per_s"] > 0
        # fp32 in every runtime: the same scores, so the same AP.
        assert result[name]["average_precision"] == pytest.approx(result["pytorch_fp32"]["average_precision"])
    assert result["pytorch_fp32"]["encode_vs_pytorch_fp32"] == 1.0
    # The pipeline every backend shares, timed without a model: a texts/s and its ratio, no AP (it scores nothing).
    assert set(result["tokenizing_alone"]) == {"texts_per_s", "encode_vs_pytorch_fp32"}
    assert (tmp_path / "out.json").is_file() and '"openvino_fp32"' in capsys.readouterr().out


@pytest.mark.slow
def test_the_peer_runs_in_the_interpreter_given_on_a_faithful_export(tmp_path, tiny_transformer, word_tokenizer):
    """
    `--st_python` runs sentence-transformers' variants in another interpreter (here this one: sentence-transformers
    without optimum): its fp32 anchor scores the pairs as hfsiamese does, and a backend it cannot load is reported.
    """
    import sys

    tiny_transformer.eval().save_pretrained(tmp_path / "model")
    word_tokenizer.save_pretrained(tmp_path / "model")
    rows = [f"{a}\t{b}\t{int(i % 2 == 0)}" for i, (a, b) in enumerate(zip(TEXTS[0::2], TEXTS[1::2], strict=True))]
    rows += [f"{a}\t{b}\t0" for a, b in zip(TEXTS[:4], TEXTS[4:], strict=True)]
    (tmp_path / "pairs.tsv").write_text("question1\tquestion2\tlabel\n" + "\n".join(rows) + "\n", encoding="utf-8")
    result = main(
        ["--model", str(tmp_path / "model"), "--pairs_file", str(tmp_path / "pairs.tsv"), "--texts", "12",
         "--repeats", "1", "--variants", "pytorch_fp32", "st_onnx_int8", "--st_python", sys.executable]
    )  # fmt: skip
    assert result["st_torch_fp32"]["average_precision"] == pytest.approx(result["pytorch_fp32"]["average_precision"])
    assert result["st_torch_fp32"]["texts_per_s"] > 0 and "encode_vs_pytorch_fp32" in result["st_torch_fp32"]
    assert "st_onnx_int8" in result["skipped"]


def test_tokenizing_alone_batches_every_text_as_encode_does():
    """The ceiling row runs `encode`'s tokenising and padding over every text, at `encode`'s batch size."""
    tokenizer = train_word_tokenizer(TEXTS, vocab_size=100, model_max_length=16)
    model = tiny_model("static", len(tokenizer)).eval()
    texts = TEXTS * 40  # more than one padded batch of encode's default 64
    assert tokenizing_alone(model, tokenizer)(texts) == len(texts)


def test_help_names_every_variant(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    assert "st_openvino_int8" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "config"),
    [
        ({"avx2", "fma"}, "avx2"),
        ({"avx2", "avx512f", "avx512bw", "avx512vl"}, "avx512"),
        ({"avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"}, "avx512_vnni"),
        ({"avx2", "avx512f"}, "avx2"),  # AVX-512 without its byte/word instructions: onnxruntime's AVX2 kernels
    ],
)
def test_the_peer_quantises_for_the_cpu_it_runs_on(flags, config):
    """sentence-transformers' ONNX int8 peer in the configuration its docs advise for the CPU (hfsiamese's own
    reading of the CPU's flags decides), not "avx2" everywhere."""
    from benchmarks.serving.cpu_backends import st_onnx_config
    from hfsiamese.utils.cpu_features import features_from_flags

    assert st_onnx_config(features_from_flags(frozenset(flags))) == config
