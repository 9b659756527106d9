// Package runtimepolicy is the process's scheduling and memory policy:
// where the server yields its processor to the Go scheduler, when it
// hands memory back to the system, the Go memory limit and the garbage
// collector's headroom. Each choice is here with its reason and the
// measurement that justified it (docs/benchmarks.md has the commands),
// so that one that stops measuring better is found and dropped in one
// place. The packages that act on them (search, store, index, cli, and
// the owners' indexes) call these functions rather than the runtime's.
//
// Its figures come from 2-core machines shared with other work, so each
// is a comparison of builds alternated in one sitting.
package runtimepolicy
