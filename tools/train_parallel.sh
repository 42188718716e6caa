#!/usr/bin/env bash
# Train several presets at once, one process each, and write their checkpoints to data/.
# Chapter 3's twelve pool-size models were trained so, six at a time on one GPU (about
# 4.5 minutes per six; python -m icl_lib.presets picks the GPU when there is one).
#   tools/train_parallel.sh stability_pool_2 stability_pool_4 ...
set -euo pipefail
PY=${PY:-.venv/bin/python}
for name in "$@"; do
    "$PY" -m icl_lib.presets "$name" --force < /dev/null > "/tmp/train_$name.log" 2>&1 &
done
wait
tail -n 1 /tmp/train_*.log
