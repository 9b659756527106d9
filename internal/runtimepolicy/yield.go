package runtimepolicy

import "runtime"

// YieldBeforeSearch yields the processor before an index search starts,
// so that queries are searched about in the order they came. When every
// processor is busy, Go's scheduler finds requests on the network late:
// its monitor polls for them when no processor has for 10 ms, and puts
// the goroutines it wakes on the global run queue, which a busy processor
// reads only once every 61 goroutines it runs, while those woken by its
// own work (the next request on a connection, a search's turn) run first.
// Yielding puts every search through that queue, in turn. Served in turn,
// most queries wait about the mean, so the median rises as the tail
// falls. With one query at a time it yields to nothing.
//
// At a million chunks, eight clients on two cores, four rounds alternated
// with a build that does not yield (e8f3d94, 2026-12-07): p99 15.5–18.4
// ms against 23.4–26.4, the median 4.4–4.8 against 3.3–3.9, the server's
// CPU a query the same. Again at 100,000 chunks on a machine busy with
// other work, twelve rounds alternated (2026-12-07): p99 a median 34.2 ms
// (25.9–139.8) against 48.3 (24.3–64.6), lower in 7 rounds of 12 (paired
// ratio 0.86); the median 7.8 ms against 6.5; as many queries a second
// (883 against 876). docs/benchmarks.md has the commands.
func YieldBeforeSearch() { runtime.Gosched() }

// YieldToGroupCommit yields the processor of a group commit's leader
// while more callers join its group (store/bolt/commit.go bounds how many
// times). When the cores are busy, callers about to write wait for a
// core, not for anything else, and a yield lets them run and join the
// same transaction and its fsyncs; with nobody else runnable it returns
// at once, so a lone caller loses nothing, as it would to a wait of a
// fixed time.
//
// On the MS MARCO sample (2026-12-07): through the API with 64 clients on
// 2 cores 4,550–5,500 chunks/s and 16 KB written a chunk, against
// 4,200–4,600 and 22 KB without; with 8 in-process uploaders (bench
// ingest) 6,250–6,550 against 4,050–4,700. Again with 8 in-process
// uploaders on a machine busy with other work, twelve rounds alternated
// with a leader that does not yield (2026-12-07): a median 534 chunks/s
// (425–686) against 468 (348–596), more in 10 rounds of 12 (paired ratio
// 1.09). docs/benchmarks.md has the commands.
func YieldToGroupCommit() { runtime.Gosched() }
