"""
Embedding a corpus too large for one process or one sitting: in shards, by several processes or machines, resumably.

A corpus of millions of texts takes hours to embed; a crash, a preempted machine or a Ctrl-C then must not cost
the hours already spent, and several GPUs (or machines) should share the work without talking to each other.
So the corpus is cut into shards of `shard_size` consecutive rows, and each shard is one Parquet file in a
shards folder, written under a temporary name and moved into place whole (`os.replace`): a file named
`shard-00000.parquet` is complete, and whoever finds it there skips that shard. A rerun after a crash
redoes only the shards whose file is missing (at most the one each process had in progress).

    shards.json            format version, corpus fingerprint (count + sha256 of the texts), shard size,
                           embedding size, encoding settings, model fingerprint (probe embeddings)
    shard-00000.parquet    columns `row` (int64, corpus row numbers) and `embedding`
    shard-00001.parquet    (fixed_size_list<float32>[dim]), rows [i * shard_size, (i + 1) * shard_size)
    ...

The manifest is what makes resuming safe: shards of another corpus, shard size or model in the same folder
would be silently mixed into one matrix, so a rerun that differs is refused and told to use another folder.

Two ways to run it, writing the same files:
  * `encode_to_shards`: in this process, or in every process of `accelerate launch` (shard i goes to
    process i % num_processes; no communication beyond two barriers);
  * `encode_to_shards_ray`: Ray actors on this machine or on a cluster (the `ray` extra).
`EmbeddingShards` reads a finished folder back: by batches in row order, or assembled into one `.npy` file
(memory-mapped, written shard by shard, so the corpus never has to fit in memory).

Modules: `shard_files` (a shard's rows, name, writing and reading), `manifest` (`shards.json` and its
checks), `model_encoding` (the model loaded, its precision, its fingerprint, a shard encoded),
`local_encoding` (`encode_to_shards`), `ray_encoding` (`encode_to_shards_ray`), `reader` (`EmbeddingShards`).
"""

from hfsiamese.search.shards.local_encoding import encode_to_shards
from hfsiamese.search.shards.manifest import MANIFEST_NAME, read_manifest
from hfsiamese.search.shards.ray_encoding import encode_to_shards_ray
from hfsiamese.search.shards.reader import EmbeddingShards

__all__ = [
    "MANIFEST_NAME",
    "EmbeddingShards",
    "encode_to_shards",
    "encode_to_shards_ray",
    "read_manifest",
]
