// Package runtimepolicy is the process's scheduling and memory policy:
// where the server yields its processor to the Go scheduler, when it
// hands memory back to the system, the Go memory limit and the garbage
// collector's headroom. Each choice is here with its reason and the
// measurement that justified it (docs/benchmarks.md has the commands),
// so that one that stops measuring better is found and dropped in one
// place. The packages that act on them (search, store/bolt, indexes and
// cli) call these functions rather than the runtime's.
//
// Its figures come from 2-core machines shared with other work, so each
// is a comparison of builds alternated in one sitting.
//
// Dropped: graph inserts yielded after each node they linked, so that a
// search made runnable while every processor was busy would wait for one
// node's insert rather than the scheduler's 10 ms slice. Measured
// (2026-12-07, BenchmarkSearchDuringCommit and BenchmarkHNSWBuild, six
// rounds alternated with a build without the yields), searches' p99
// during commits was a median 40.8 ms (28.1–140.9) with them against 39.4
// (23.7–71.4) without, its ratio to the idle p99 1.73 against 1.89, and
// builds 14,400 vectors/s (3,800–18,200) against 11,000 (8,200–23,300),
// paired ratios 1.22, 0.98 and 0.77: no consistent gain, so they went.
package runtimepolicy
