package search

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/indexes"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// noChunks is an indexes.Source of owners without chunks.
type noChunks struct{}

func (noChunks) OwnerSeqs(string) ([]uint64, error)                   { return nil, nil }
func (noChunks) OwnerModel(string) (*store.OwnerModel, error)         { return nil, store.ErrNotFound }
func (noChunks) MissingVectors(string, string) ([]uint64, error)      { return nil, nil }
func (noChunks) Entries(string, int, []uint64) ([]index.Entry, error) { return nil, nil }

// emptyOwners serves owners with empty indexes, without an embedder:
// searches are lexical.
type emptyOwners struct{ set *indexes.Set }

func newEmptyOwners(t *testing.T) emptyOwners {
	return emptyOwners{indexes.New(noChunks{}, t.TempDir(), "none", func() int { return 0 }, indexes.Options{}, slog.New(slog.DiscardHandler))}
}

func (o emptyOwners) Indexes() *indexes.Set               { return o.set }
func (emptyOwners) Embedder(string) (llm.Embedder, error) { return nil, errors.New("no embedder here") }

func TestSearchesWaitForASlot(t *testing.T) {
	st, err := bolt.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := New(newEmptyOwners(t), st, llm.NewExtractive(), nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if n := cap(s.searching); n != DefaultMaxSearches() {
		t.Fatalf("%d searches at once by default, want %d", n, DefaultMaxSearches())
	}
	s.SetMaxSearches(3)
	if n := cap(s.searching); n != 3 {
		t.Fatalf("%d searches at once after SetMaxSearches(3)", n)
	}
	search := func(ctx context.Context) error {
		_, _, err := s.SearchFiltered(ctx, "prj_a", "anything", 5, nil)
		return err
	}
	if err := search(context.Background()); err != nil {
		t.Fatalf("search with every slot free: %v", err)
	}
	if n := len(s.searching); n != 0 {
		t.Fatalf("%d slots taken after a search, want 0: a search must give its slot back", n)
	}

	// Every slot taken: a search waits, until its request ends...
	for range cap(s.searching) {
		s.searching <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := search(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("search with no slot free until its deadline: %v, want the deadline's error", err)
	}
	if n := s.waiting.Load(); n != 0 {
		t.Fatalf("%d searches counted waiting after the one waiting gave up", n)
	}
	// ... or a slot is freed.
	done := make(chan error)
	go func() { done <- search(context.Background()) }()
	for s.waiting.Load() != 1 {
		runtime.Gosched() // until the search counts itself waiting
	}
	select {
	case err := <-done:
		t.Fatalf("search ended (%v) with no slot free", err)
	default:
	}
	<-s.searching
	if err := <-done; err != nil {
		t.Fatalf("search once a slot was freed: %v", err)
	}
	if n := s.waiting.Load(); n != 0 {
		t.Fatalf("%d searches counted waiting after every one ended", n)
	}
}
