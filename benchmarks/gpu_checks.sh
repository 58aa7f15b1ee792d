#!/usr/bin/env bash
# The GPU checks of one lease, in one command: a lent GPU is held for minutes only, and each start costs one.
#
#   bash benchmarks/gpu_checks.sh --prepare      # here: fills .gpu/ (../shared/gpu/prepare.sh --real-weights: wheels,
#                                                # MiniLM in float16) and adds deepspeed and its needs the image lacks
#   # there, from the project root, with .gpu carried:
#   bash benchmarks/gpu_checks.sh OUT_DIR [PAIRS]
#
# In turn, each with its own time limit and log in OUT_DIR (a part that fails or runs out leaves its log and the next
# part runs): the GPU test module (tests/test_on_cuda.py); training throughput, hfsiamese against
# sentence-transformers' trainer in one run, fp32 and bf16; encoding throughput, both libraries; then issue 47's GPU
# loader figure: a PAIRS-pair synthetic file (default 1,000,000) prepared with `hfsiamese prepare`, the streaming
# loader alone at 0, 4 and 8 workers, and `hfsiamese train minilm_qqp` from the prepared folder in bf16.
# GPU_CHECKS_PARTS="test_on_cuda training_throughput" runs those parts only (a second call in the same lease);
# GPU_CHECKS_BATCH sets the training batch (default 256), GPU_CHECKS_STEPS its steps (default 100).
# GPU_CHECKS_DEVICE=cpu GPU_CHECKS_SMALL=1 runs the same parts small on a CPU (to try this script before a lease).
set -u
if [ "${1:-}" = --prepare ]; then  # on the developer's machine, with the project's virtual environment
  set -e
  py=${PYTHON:-.venv/bin/python}
  PYTHON=$py bash ../shared/gpu/prepare.sh --real-weights
  version=$("$py" -m pip show deepspeed | sed -n 's/^Version: //p')  # the test extra's: CI tests the same
  "$py" -m pip wheel -q --no-deps -w .gpu/whl "deepspeed==$version"  # published as source only: a pure wheel here
  for spec in hjson pydantic pydantic_core annotated-types typing-inspection; do  # not in the GPU image
    pinned=$("$py" -m pip show "$spec" | sed -n 's/^Version: //p')
    "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d .gpu/whl "$spec==$pinned"
  done
  du -sh .gpu
  exit 0
fi
out=${1:?usage: bash benchmarks/gpu_checks.sh OUT_DIR [PAIRS]}
pairs=${2:-1000000}
device=${GPU_CHECKS_DEVICE:-cuda}
mkdir -p "$out"
if [ "$device" = cuda ]; then
  # shellcheck disable=SC1091
  source .gpu/device_setup.sh > "$out/setup.log" 2>&1 || { cat "$out/setup.log"; exit 1; }
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
fi
py=${PYTHON:-python3}
small=${GPU_CHECKS_SMALL:-}
steps=${GPU_CHECKS_STEPS:-100}; batch=${GPU_CHECKS_BATCH:-256}; texts=20000; loader_batches=200; train_steps=300
if [ -n "$small" ]; then steps=6; batch=16; texts=300; loader_batches=20; train_steps=8; fi
# The installed `hfsiamese` command, or its entry point where the project is on PYTHONPATH only (the GPU machine).
hfsiamese() { "$py" -c 'import sys; from hfsiamese.cli.main import main; sys.argv[0] = "hfsiamese"; sys.exit(main())' "$@"; }
selected=" ${GPU_CHECKS_PARTS:-test_on_cuda training_throughput encoding_throughput loader} "
part() {  # part NAME SECONDS COMMAND...: one part, its log, its wall time and exit status on one line of parts.log
  local name=$1 limit=$2 start rc
  shift 2
  [[ "$selected" == *" $name "* ]] || return 0
  start=$(date +%s)
  timeout "$limit" "$@" > "$out/$name.log" 2>&1
  rc=$?
  echo "$name rc=$rc wall_s=$(( $(date +%s) - start ))" | tee -a "$out/parts.log"
}
if [ "$device" = cuda ]; then
  part test_on_cuda 150 "$py" -m pytest -o addopts="" tests/test_on_cuda.py -q -p no:cacheprovider -rs --durations=10
fi
part training_throughput 160 "$py" benchmarks/training/training_throughput.py --device "$device" \
  --batch_size "$batch" --steps "$steps" --repeats 1 --precisions fp32 bf16
part encoding_throughput 70 "$py" benchmarks/encoding/encoding_throughput.py --device "$device" \
  --num_texts "$texts" --batch_sizes 256 1024 --repeats 2
work=$(mktemp -d)
loader() {  # the synthetic file, its preparation, the loader alone at 0/4/8 workers, then a bf16 run from the folder
  "$py" benchmarks/search/make_pairs_file.py "$work/pairs.tsv" --pairs "$pairs" || return 1
  hfsiamese prepare --train_file "$work/pairs.tsv" --output_dir "$work/prepared" --preprocessing_num_workers 8 || return 1
  for workers in 0 4 8; do
    "$py" benchmarks/training/loader_throughput.py --prepared "$work/prepared" --num_workers "$workers" \
      --batch_size "$batch" --batches "$loader_batches" || return 1
  done
  local precision=(--bf16 true)
  [ "$device" = cuda ] || precision=()
  hfsiamese train minilm_qqp --train_file "$work/prepared" --output_dir "$work/run" --max_steps "$train_steps" \
    --per_device_train_batch_size "$batch" --dataloader_num_workers 4 "${precision[@]}" \
    --eval_strategy no --save_strategy no --logging_steps 50 --disable_tqdm true || return 1
  cp "$work/run/all_results.json" "$out/loader_train_results.json"
}
export -f loader hfsiamese
export py work pairs batch loader_batches train_steps device out
part loader 170 bash -c loader
rm -rf "$work"
