#!/usr/bin/env python3
"""hnswlib and FAISS on the same .fvecs files as `docsift bench index`.

Usage: ann_compare.py DIR EF_CONSTRUCTION EF
DIR holds base.fvecs, query.fvecs and groundtruth.ivecs; EF_CONSTRUCTION
and EF are the candidate lists docsift's index used (its bench JSON's
ef_construction and ef). Builds an HNSW index in each library with
docsift's parameters (M=16, so 32 links on layer 0, and those lists),
builds on every core and searches on one like docsift's measurement, on inner product (the
vectors are unit length, so cosine), and prints one JSON line per library:
recall@10, single-thread queries/s, build time and the resident memory the
index added.
"""
import json, os, sys, time
import numpy as np

M, K = 16, 10
CORES = os.cpu_count()
if len(sys.argv) != 4:
    sys.exit(__doc__)
EF_CONSTRUCTION, EF_SEARCH = int(sys.argv[2]), int(sys.argv[3])


def read_vecs(path, dtype):
    raw = np.fromfile(path, dtype=np.int32)
    dim = raw[0]
    rows = raw.reshape(-1, dim + 1)[:, 1:]
    return np.ascontiguousarray(rows.view(dtype) if dtype == np.float32 else rows)


def rss_bytes():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def run(name, build, search):
    before = rss_bytes()
    t = time.perf_counter()
    index = build()
    build_s = time.perf_counter() - t
    mem = rss_bytes() - before
    found = 0
    t = time.perf_counter()
    for i, q in enumerate(queries):
        found += len(set(search(index, q)) & set(truth[i][:K]))
    search_s = time.perf_counter() - t
    print(json.dumps({
        "library": name, "n": len(base), "dim": base.shape[1],
        "ef": EF_SEARCH, "ef_construction": EF_CONSTRUCTION,
        "recall_at_10": found / (len(queries) * K),
        "search_qps": len(queries) / search_s,
        "build_seconds": build_s,
        "build_vectors_per_second": len(base) / build_s,
        "bytes_per_vector": mem / len(base),
    }))
    sys.stdout.flush()


d = sys.argv[1]
base = read_vecs(f"{d}/base.fvecs", np.float32)
queries = read_vecs(f"{d}/query.fvecs", np.float32)
truth = read_vecs(f"{d}/groundtruth.ivecs", np.int32)

import hnswlib


def hnswlib_build():
    p = hnswlib.Index(space="ip", dim=base.shape[1])
    p.init_index(max_elements=len(base), M=M, ef_construction=EF_CONSTRUCTION, random_seed=1)
    p.set_num_threads(CORES)
    p.add_items(base, np.arange(len(base)))
    p.set_num_threads(1)
    p.set_ef(EF_SEARCH)
    return p


run("hnswlib", hnswlib_build, lambda p, q: p.knn_query(q, k=K)[0][0])

import faiss



def faiss_build():
    f = faiss.IndexHNSWFlat(base.shape[1], M, faiss.METRIC_INNER_PRODUCT)
    f.hnsw.efConstruction = EF_CONSTRUCTION
    faiss.omp_set_num_threads(CORES)
    f.add(base)
    faiss.omp_set_num_threads(1)
    f.hnsw.efSearch = EF_SEARCH
    return f


run("faiss", faiss_build, lambda f, q: f.search(q.reshape(1, -1), K)[1][0])
