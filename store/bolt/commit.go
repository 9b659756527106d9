package bolt

import (
	"fmt"
	"slices"
	"sync"

	"go.etcd.io/bbolt"

	"github.com/docsift/docsift/internal/runtimepolicy"
)

// Group commits. Every bbolt commit ends with two fdatasyncs, a fraction of
// a millisecond to milliseconds each, while the records of a small document
// take microseconds to write. So the writes that come with every upload and
// every job (creating the document, claiming, writing chunks, finishing)
// go through update: calls that arrive while a commit is under way wait for
// it, and the next commit takes all of them in one transaction and one pair
// of fsyncs. A call returns once its transaction is durable, as with
// db.Update: nothing acknowledged is lost by a crash.
//
// bbolt's own DB.Batch does the same but waits up to MaxBatchDelay for
// company before committing, which a caller alone (a job under its owner's
// commit lock, an upload when nothing else runs) would pay every time.
// Here the first caller commits at once, but for the yields below, and
// its company is whoever came meanwhile.
//
// Under a stream of writes the commits follow one another with no pause,
// each taking whoever came while the last one ran, and what a commit costs
// grows far slower than what it takes: bbolt rewrites every page the
// group's records land on, and most of a stream's records go at the right
// edge of their buckets. When the cores are busy, callers that are about
// to call update wait for a core, not for anything else; so a leader first
// yields its core while the queue grows, up to gatherYields times, and
// they join its group. With nobody else runnable a yield returns at once:
// a lone caller, or callers bound by latency rather than by the cores,
// lose nothing, as they would to a wait of a fixed time. The MS MARCO
// sample four times over: through the API with 64 clients (2 cores)
// 4,550–5,500 chunks/s, 16 KB written a chunk, against 4,200–4,600 and 22
// KB without yielding; with 8 clients 3,330–3,480 against 3,080–3,170;
// with 8 in-process uploaders (bench ingest) 6,250–6,550 against
// 4,050–4,700; one client alike (1,000 uploads a second).
//
// A function given to update may run more than once: when another one in
// its transaction fails, the transaction is rolled back and run again
// without that one. So it must derive every output from its last run,
// resetting what it captures, and must not act outside the transaction.

// commitQueue is the calls waiting for the next group commit.
type commitQueue struct {
	mu      sync.Mutex
	waiting []*commitCall
	leading bool // a caller is committing; the rest wait for it
}

// gatherYields bounds the yields of a leader before it commits (see above).
const gatherYields = 8

// commitCall is one function waiting in the queue. wake receives true when
// its caller is to commit the next group itself, false when its function
// has been committed (or failed) with the group of another caller.
type commitCall struct {
	fn   func(*bbolt.Tx) error
	err  error
	wake chan bool
}

// update runs fn in a write transaction, grouped with the calls that wait
// meanwhile (see above), and returns fn's error or the commit's.
func (s *Store) update(fn func(*bbolt.Tx) error) error {
	c := &commitCall{fn: fn, wake: make(chan bool, 1)}
	q := &s.commits
	q.mu.Lock()
	q.waiting = append(q.waiting, c)
	lead := !q.leading
	q.leading = true
	q.mu.Unlock()
	if !lead && !<-c.wake {
		return c.err
	}
	// This caller commits every call waiting now, its own among them,
	// then hands the lead to the first that came meanwhile, so that no
	// caller commits for others for longer than one group.
	gather(q.queued, runtimepolicy.YieldToGroupCommit)
	q.mu.Lock()
	group := q.waiting
	q.waiting = nil
	q.mu.Unlock()
	s.commitGroup(group)
	q.mu.Lock()
	if len(q.waiting) > 0 {
		q.waiting[0].wake <- true
	} else {
		q.leading = false
	}
	q.mu.Unlock()
	for _, other := range group {
		if other != c {
			other.wake <- false
		}
	}
	return c.err
}

// gather yields while the calls queued keep growing, at most gatherYields
// times (see above).
func gather(queued func() int, yield func()) {
	n := queued()
	for range gatherYields {
		yield()
		m := queued()
		if m == n {
			return
		}
		n = m
	}
}

// queued is how many calls wait for the next commit.
func (q *commitQueue) queued() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}

// commitGroup runs the functions of group in one transaction. One that
// fails gets its error and is left out, and the transaction, rolled back,
// is run again without it: its failure saw the others' writes before it,
// and it wrote nothing, so its caller sees what a serial order would have
// shown it.
func (s *Store) commitGroup(group []*commitCall) {
	todo := slices.Clone(group)
	for len(todo) > 0 {
		failed := -1
		err := s.db.Update(func(tx *bbolt.Tx) error {
			fillAppended(tx)
			for i, c := range todo {
				if err := c.run(tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 { // committed, or the commit itself failed for all
			for _, c := range todo {
				c.err = err
			}
			return
		}
		todo[failed].err = err
		todo = slices.Delete(todo, failed, failed+1)
	}
}

// appendedBuckets are keyed by ids (see NewID), sequences or times: new
// keys go at the right edge of the tree (of an owner's part of it, for
// owner-prefixed keys), and the pages left behind take no more.
var appendedBuckets = [][]byte{bucketDocuments, bucketOwnerDocs, bucketJobs,
	bucketQueue, bucketRunning, bucketChunks, bucketSeqs, bucketOwnerSeqs, bucketVectors,
	bucketOriginals}

// fillAppended has bbolt fill the pages of appendedBuckets to 90% when it
// splits them, not to its default 50%, which suits keys that land anywhere
// in the tree and left these pages half empty for good (a database a
// quarter larger). A tenth is left for records that grow when updated.
func fillAppended(tx *bbolt.Tx) {
	for _, name := range appendedBuckets {
		tx.Bucket(name).FillPercent = 0.9
	}
}

// run runs c's function, turning a panic into its error: the callers
// committing with it, and every later commit, must not wait for ever
// behind a bug.
func (c *commitCall) run(tx *bbolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store: bug in a transaction: %v", r)
		}
	}()
	return c.fn(tx)
}
