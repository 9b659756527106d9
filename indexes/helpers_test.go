package indexes

import (
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/store"
)

func quietLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// memSource is a Source in memory, standing for the store: each owner's
// chunks as the entries it reads them as, and the model of each owner
// that has vectors.
type memSource struct {
	mu     sync.Mutex
	chunks map[string]map[uint64]index.Entry // by owner, then sequence
	models map[string]store.OwnerModel
}

func newMemSource() *memSource {
	return &memSource{chunks: map[string]map[uint64]index.Entry{}, models: map[string]store.OwnerModel{}}
}

// put stores es as owner's chunks, as another node's commit would.
func (s *memSource) put(owner string, es ...index.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chunks[owner] == nil {
		s.chunks[owner] = map[uint64]index.Entry{}
	}
	for _, e := range es {
		s.chunks[owner][e.ID] = e
	}
}

// remove deletes owner's chunks of seqs.
func (s *memSource) remove(owner string, seqs ...uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, seq := range seqs {
		delete(s.chunks[owner], seq)
	}
}

func (s *memSource) setModel(owner, model string, dim int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models[owner] = store.OwnerModel{Model: model, Dim: dim}
}

func (s *memSource) OwnerSeqs(owner string) ([]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seqs := make([]uint64, 0, len(s.chunks[owner]))
	for seq := range s.chunks[owner] {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	return seqs, nil
}

func (s *memSource) OwnerModel(owner string) (*store.OwnerModel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if om, ok := s.models[owner]; ok {
		return &om, nil
	}
	return nil, store.ErrNotFound
}

func (s *memSource) MissingVectors(owner, model string) ([]uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var missing []uint64
	for seq, e := range s.chunks[owner] {
		if !slices.ContainsFunc(e.Vector, func(v float32) bool { return v != 0 }) {
			missing = append(missing, seq)
		}
	}
	slices.Sort(missing)
	return missing, nil
}

func (s *memSource) Entries(model string, dim int, seqs []uint64) ([]index.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []index.Entry
	for _, seq := range seqs {
		for _, chunks := range s.chunks {
			if e, ok := chunks[seq]; ok && len(e.Vector) == dim {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// testSet returns a set over src, its snapshots in a fresh directory,
// whose new owners take 2-dimensional vectors of model "m".
func testSet(t *testing.T, src Source, opts Options) *Set {
	t.Helper()
	return New(src, filepath.Join(t.TempDir(), "index"), "m", func() int { return 2 }, opts, quietLog())
}

// testIndexes returns a set over an empty source.
func testIndexes(t *testing.T) *Set {
	t.Helper()
	return testSet(t, newMemSource(), Options{})
}

// background runs a set's background work (Options.Go), each task once
// hold lets it go (nil: at once), counting the tasks started and saying
// on done when each has run.
type background struct {
	hold    chan struct{}
	started atomic.Int32
	done    chan struct{}
}

func newBackground() *background { return &background{done: make(chan struct{}, 64)} }

func (b *background) run(task func()) {
	b.started.Add(1)
	go func() {
		if b.hold != nil {
			<-b.hold
		}
		task()
		b.done <- struct{}{}
	}()
}

// wait waits for a task to have run, and fails the test if none does
// within stuckLimit.
func (b *background) wait(t *testing.T) {
	t.Helper()
	select {
	case <-b.done:
	case <-time.After(stuckLimit):
		t.Fatal("no background task ran")
	}
}
