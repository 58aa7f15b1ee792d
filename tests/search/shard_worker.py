"""
Worker of test_embedding_shards.py, run with `accelerate launch --multi_gpu --num_processes 2` on CPU.

Every process calls `encode_to_shards` with the same texts and model folder, as a user's script would, and
records which shards it wrote itself (through `write_shard`, which every shard goes through) into
`<log_dir>/process-<rank>.json`; the test checks that each shard was written once, by its process.

    python shard_worker.py TEXTS_JSON SHARDS_DIR MODEL_DIR LOG_DIR SHARD_SIZE
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from accelerate import PartialState

from hfsiamese.search.shards import local_encoding


def main(texts_file: str, shards_dir: str, model_dir: str, log_dir: str, shard_size: str) -> None:
    texts = json.loads(Path(texts_file).read_text(encoding="utf-8"))
    written = []
    write_shard = local_encoding.write_shard

    def recording_write_shard(directory, index, start, embeddings):
        written.append(index)
        return write_shard(directory, index, start, embeddings)

    local_encoding.write_shard = recording_write_shard
    shards = local_encoding.encode_to_shards(texts, shards_dir, model_dir, shard_size=int(shard_size), batch_size=8)
    state = PartialState()  # the state encode_to_shards set up (created first without cpu=True, it would be 1 process)
    record = {
        "process_index": state.process_index,
        "num_processes": state.num_processes,
        "written": written,
        "num_texts": shards.num_texts,  # every process gets the finished folder back
    }
    Path(log_dir, f"process-{state.process_index}.json").write_text(json.dumps(record), encoding="utf-8")
    state.wait_for_everyone()
    state.destroy_process_group()


if __name__ == "__main__":
    main(*sys.argv[1:])
