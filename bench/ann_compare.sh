#!/usr/bin/env bash
# docsift's vector index against hnswlib and FAISS on the same vectors:
# recall@10, single-thread queries/s, build rate and memory per vector, with
# matched HNSW parameters (M 16, and the candidate lists docsift's index
# uses at that size, read from its JSON). Needs Debian's python3-hnswlib, python3-faiss and
# python3-numpy (installed when missing, as root).
#
#   bench/ann_compare.sh [N] [DIM]      (default 100000 384)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100000}
DIM=${2:-384}
PY=/usr/bin/python3 # Debian's python, where the packages install

if ! $PY -c 'import hnswlib, faiss, numpy' 2>/dev/null; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq && apt-get install -y -qq python3-hnswlib python3-faiss python3-numpy >/dev/null
fi
[ -x bin/docsift ] || make build >&2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# docsift makes the data (clustered synthetic vectors and exact neighbours),
# then runs on the files like the others.
bin/docsift bench index --n "$N" --dim "$DIM" --queries 1000 --export "$dir" >/dev/null
bin/docsift bench index --vectors "$dir/base.fvecs" --queries "$dir/query.fvecs" --ground-truth "$dir/groundtruth.ivecs" --json >"$dir/docsift.json"
echo "docsift:"
cat "$dir/docsift.json"
read -r efc ef < <($PY -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["ef_construction"], r["ef"])' "$dir/docsift.json")
$PY bench/ann_compare.py "$dir" "$efc" "$ef"
