// Package bench is `docsift bench`'s measurements of speed through the
// pipeline or a server: ingest throughput in process (Ingest), query
// latency against a running server (Query), filtered queries (Filter),
// one owner of many chunks through a child `docsift serve` (Scale), and
// the cluster mode beside one node (Cluster). The vector index's own
// bench is package bench/indexbench and OCR's bench/ocrbench; quality is
// package eval's.
//
// The measurements run docsift as its users do, as child processes on
// throwaway data directories, and read what those say of themselves:
// /proc (proc.go), their logs (serverlog.go) and their metrics
// (memory.go).
package bench
