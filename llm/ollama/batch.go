package ollama

import (
	"sync"
	"time"
)

// Batch sizing of /api/embed requests.
//
// Ollama embeds a request's inputs concurrently, but its runner has
// OLLAMA_NUM_PARALLEL slots (one by default) and queues the rest in
// order: a query's embedding that arrives while ingest batches are queued
// waits for all of them. Measured on a 2-core machine, a model of
// nomic-embed-text's size takes 0.6 s an input, so a batch of 32 is 20 s
// of a query's wait per worker; a tiny model takes milliseconds, and there
// a batch of 32 is worth having, as the request's own cost (parsing,
// scheduling, the round trip) is then a large share of the work.
//
// So batches are sized by time, not count: as many texts as the model
// embeds in about targetBatchTime, at most the configured batch size. A
// slow model on a CPU gets batches of a few texts, which cost nothing in
// throughput (the request's cost is milliseconds against seconds of model
// time) and keep a query's wait to seconds; a fast model or a GPU gets the
// full batch. The time per text is learnt from the requests themselves,
// per server, so it follows the machine's load. Ingest sends one batch at
// a time to a server, whatever the number of workers (Embedder's
// ingest slots), so the batch time is also the longest a query waits.
//
// Measured with the nomic-sized model (ollamareal.NomicSized) on 2 cores,
// two workers embedding 32 texts each: with batches of 32 a query sent
// meanwhile took 8.7 and 10.8 s, with batches sized by time 2.1 and 2.0 s,
// and the 64 texts took as long either way (12.7–14.8 s and 13.2–13.6 s).
// With one batch in flight per server on top (BenchmarkRealOllamaQueryDuring
// Ingest, a loaded machine), the median query took 2.1 s against 5.2 s
// with each worker's batch in flight.
//
// The target is half a second, well below the query's own bound on its
// embedding (search.DefaultQueryEmbedTimeout, 2 s): a query that arrives
// just after a batch was sent waits for it, then for its own embedding
// (0.4 s with the nomic-sized model), and is still answered by meaning.
// BenchmarkRealOllamaQueriesDuringIngest (libtasn1.pdf, one client asking
// without pause, an idle machine): with 2 s batches half the queries ran
// into the bound and were answered lexically (9 of 17, p50 2.0 s); with
// 1 s batches 6 of 23 (p50 0.98 s); with 0.5 s batches 2 of 43 (p50
// 0.37 s), and the PDF was embedded no slower (3.0 chunks/s against 2.6).
const (
	// targetBatchTime is how long one embedding request should take.
	targetBatchTime = 500 * time.Millisecond

	// firstBatchSize is the batch before any request has been timed: small,
	// because the model may be slow.
	firstBatchSize = 1
)

// batchSizer picks the size of the next batch from the time per text of
// recent requests.
type batchSizer struct {
	mu      sync.Mutex
	max     int           // the configured batch size
	perText time.Duration // smoothed time per text; 0 before any request
}

// next returns how many texts the next request should carry.
func (b *batchSizer) next() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.perText <= 0 {
		return min(b.max, firstBatchSize)
	}
	return max(1, min(b.max, int(targetBatchTime/b.perText)))
}

// observe records that a request of n texts took took. The average is
// smoothed so that one slow request (a model loaded again after its
// keep-alive) does not shrink the batches for long.
func (b *batchSizer) observe(n int, took time.Duration) {
	if n <= 0 {
		return
	}
	per := took / time.Duration(n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.perText <= 0 {
		b.perText = per
		return
	}
	b.perText = (7*b.perText + 3*per) / 10
}
