package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/store"
)

// Subpages is the slice of small PDFs cut around a chunk's page, on top
// of Chunks: a subpage is cut from a chunk that exists, and goes with it.
type Subpages interface {
	Chunks
	SubpageFor(chunkID string, varience int) (*store.Subpage, error)
	ExtendSubpage(id string, ttl time.Duration) (*store.Subpage, error)
	ReadSubpage(id string) ([]byte, error)
	SweepSubpages() (int, error)
}

// RunSubpages runs every test of the Subpages slice, each on a new store.
func RunSubpages(t *testing.T, open func(t *testing.T) Subpages) {
	t.Run("SubpagesReuseAndSweep", func(t *testing.T) { subpagesReuseAndSweep(t, open(t)) })
	t.Run("ExpiredSubpageReplaced", func(t *testing.T) { expiredSubpageReplaced(t, open(t)) })
	t.Run("ConcurrentCutsShareOneSubpage", func(t *testing.T) { concurrentCutsShareOne(t, open(t)) })
	t.Run("NoSubpageOfADeletedDocument", func(t *testing.T) { noSubpageOfADeletedDocument(t, open(t)) })
	t.Run("ExtendedSubpageLastsAsNew", func(t *testing.T) { extendedSubpageLastsAsNew(t, open(t)) })
}

// twoChunks writes a document of two chunks and returns their ids.
func twoChunks(t *testing.T, s Subpages) (string, string) {
	t.Helper()
	d, _ := upload(t, s, "alice", "manual.pdf", "%PDF-manual")
	chunks := []store.Chunk{{Position: 0, Page: 4, Text: "a"}, {Position: 1, Page: 9, Text: "b"}}
	if _, err := s.ReplaceChunks(d.ID, "m", chunks, [][]float32{{1}, {1}}); err != nil {
		t.Fatal(err)
	}
	return chunks[0].ID, chunks[1].ID
}

func sameSubpage(a, b *store.Subpage) bool {
	return a.ID == b.ID && a.ProjectID == b.ProjectID && a.OwnerID == b.OwnerID && a.ChunkID == b.ChunkID &&
		a.Varience == b.Varience && a.FirstPage == b.FirstPage && a.LastPage == b.LastPage && a.FileName == b.FileName &&
		sameTime(a.CreatedAt, b.CreatedAt) && sameTime(a.ExpiresAt, b.ExpiresAt)
}

func cut(chunkID string, varience int) store.Subpage {
	return store.Subpage{ID: store.NewSubpageID(), ProjectID: "prj_test", OwnerID: "alice", ChunkID: chunkID,
		Varience: varience, FirstPage: 3, LastPage: 5, FileName: "manual.pdf"}
}

func mustCreateSubpage(t *testing.T, s Subpages, sp store.Subpage, data string, ttl time.Duration) *store.Subpage {
	t.Helper()
	got, err := s.CreateSubpage(sp, []byte(data), ttl)
	if err != nil {
		t.Fatalf("CreateSubpage(%s, %d): %v", sp.ChunkID, sp.Varience, err)
	}
	return got
}

func subpagesReuseAndSweep(t *testing.T, s Subpages) {
	chunkA, chunkB := twoChunks(t, s)
	c := newClock(s)
	in := cut(chunkA, 1)
	sp := mustCreateSubpage(t, s, in, "%PDF-a", time.Hour)
	if sp.ID != in.ID || !strings.HasPrefix(sp.ID, store.PrefixSubpage) || sp.OwnerID != "alice" || sp.FirstPage != 3 ||
		sp.LastPage != 5 || sp.FileName != "manual.pdf" || !sp.CreatedAt.Equal(c.Now()) || !sp.ExpiresAt.Equal(c.Now().Add(time.Hour)) {
		t.Fatalf("created subpage = %+v from %+v", sp, in)
	}
	// A second cut of the same chunk and varience keeps the first.
	c.Advance(time.Minute)
	again, err := s.CreateSubpage(cut(chunkA, 1), []byte("%PDF-b"), time.Hour)
	if err != nil || !sameSubpage(again, sp) {
		t.Fatalf("second create = %+v, %v; want the first %+v", again, err, sp)
	}
	// Another varience or chunk is another subpage.
	wider := mustCreateSubpage(t, s, cut(chunkA, 2), "%PDF-wider", 2*time.Hour)
	other := mustCreateSubpage(t, s, cut(chunkB, 1), "%PDF-other", 2*time.Hour)
	if wider.ID == sp.ID || other.ID == sp.ID || wider.ID == other.ID {
		t.Fatalf("subpages %s, %s, %s: want three", sp.ID, wider.ID, other.ID)
	}
	if got, err := s.SubpageFor(chunkA, 1); err != nil || !sameSubpage(got, sp) {
		t.Fatalf("SubpageFor = %+v, %v; want %+v", got, err, sp)
	}
	if got, err := s.Subpage(sp.ID); err != nil || !sameSubpage(got, sp) {
		t.Fatalf("Subpage = %+v, %v; want %+v", got, err, sp)
	}
	for id, want := range map[string]string{sp.ID: "%PDF-a", wider.ID: "%PDF-wider", other.ID: "%PDF-other"} {
		if data, err := s.ReadSubpage(id); err != nil || string(data) != want {
			t.Fatalf("ReadSubpage(%s) = %q, %v; want %q", id, data, err, want)
		}
	}
	if _, err := s.SubpageFor(chunkA, 3); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("SubpageFor(never cut): err = %v, want ErrNotFound", err)
	}
	if _, err := s.Subpage("sub_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Subpage(unknown): err = %v, want ErrNotFound", err)
	}
	if _, err := s.ReadSubpage("sub_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ReadSubpage(unknown): err = %v, want ErrNotFound", err)
	}
	if n, err := s.SweepSubpages(); n != 0 || err != nil {
		t.Fatalf("SweepSubpages of live subpages = %d, %v; want 0", n, err)
	}

	c.t = sp.ExpiresAt
	if _, err := s.SubpageFor(chunkA, 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired subpage still reused: err = %v", err)
	}
	// Expired, it is still a record until swept.
	if got, err := s.Subpage(sp.ID); err != nil || !got.Expired(c.Now()) {
		t.Fatalf("Subpage(expired) = %+v, %v; want it, expired", got, err)
	}
	if n, err := s.SweepSubpages(); n != 1 || err != nil {
		t.Fatalf("SweepSubpages = %d, %v; want 1", n, err)
	}
	if _, err := s.Subpage(sp.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record survived the sweep: err = %v", err)
	}
	if _, err := s.ReadSubpage(sp.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("PDF survived the sweep: err = %v", err)
	}
	if got, err := s.SubpageFor(chunkA, 2); err != nil || got.ID != wider.ID {
		t.Fatalf("the sweep took a live subpage: %+v, %v", got, err)
	}
}

func expiredSubpageReplaced(t *testing.T, s Subpages) {
	chunkA, _ := twoChunks(t, s)
	c := newClock(s)
	old := mustCreateSubpage(t, s, cut(chunkA, 1), "%PDF-old", time.Hour)
	c.Advance(2 * time.Hour)
	fresh := mustCreateSubpage(t, s, cut(chunkA, 1), "%PDF-new", time.Hour)
	if fresh.ID == old.ID || !fresh.CreatedAt.Equal(c.Now()) {
		t.Fatalf("cut of an expired subpage's chunk = %+v; want a new one", fresh)
	}
	if got, err := s.SubpageFor(chunkA, 1); err != nil || got.ID != fresh.ID {
		t.Fatalf("SubpageFor = %+v, %v; want the new %s", got, err, fresh.ID)
	}
	if data, err := s.ReadSubpage(fresh.ID); err != nil || string(data) != "%PDF-new" {
		t.Fatalf("ReadSubpage(new) = %q, %v", data, err)
	}
	if n, err := s.SweepSubpages(); n != 1 || err != nil {
		t.Fatalf("SweepSubpages = %d, %v; want the old one only", n, err)
	}
	if got, err := s.SubpageFor(chunkA, 1); err != nil || got.ID != fresh.ID {
		t.Fatalf("after the sweep, SubpageFor = %+v, %v; want the new %s", got, err, fresh.ID)
	}
	if _, err := s.Subpage(old.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the old subpage survived the sweep: err = %v", err)
	}
}

// Cuts of one chunk and varience asked for at once, as by requests on
// several nodes, all get the same subpage and its PDF.
func concurrentCutsShareOne(t *testing.T, s Subpages) {
	chunkA, _ := twoChunks(t, s)
	newClock(s)
	const cutters = 8
	in := make([]store.Subpage, cutters)
	got := make([]*store.Subpage, cutters)
	errs := make([]error, cutters)
	var wg sync.WaitGroup
	for i := range cutters {
		in[i] = cut(chunkA, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = s.CreateSubpage(in[i], []byte(fmt.Sprint("%PDF-", i)), time.Hour)
		}()
	}
	wg.Wait()
	winner := -1
	for i := range cutters {
		if errs[i] != nil {
			t.Fatalf("cutter %d: %v", i, errs[i])
		}
		if got[i].ID != got[0].ID {
			t.Fatalf("cutters 0 and %d got subpages %s and %s; want one", i, got[0].ID, got[i].ID)
		}
		if in[i].ID == got[0].ID {
			winner = i
		} else if _, err := s.Subpage(in[i].ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("cutter %d's dropped subpage was kept: err = %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("subpage %s is none of the cutters'", got[0].ID)
	}
	if data, err := s.ReadSubpage(got[0].ID); err != nil || string(data) != fmt.Sprint("%PDF-", winner) {
		t.Fatalf("ReadSubpage = %q, %v; want cutter %d's PDF", data, err, winner)
	}
}

// A subpage is never kept for a document deleted before it was stored,
// nor while it was: the PDF cut from a deleted document's pages would be
// served, without a key, until it expired. Cuts and deletes race here as
// a delete during a cut does.
func noSubpageOfADeletedDocument(t *testing.T, s Subpages) {
	newClock(s)
	chunk, _ := twoChunks(t, s)
	c, err := s.Chunk(chunk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteDocument(c.DocumentID); err != nil {
		t.Fatal(err)
	}
	in := cut(chunk, 1)
	if sp, err := s.CreateSubpage(in, []byte("%PDF-late"), time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateSubpage of a deleted document's chunk = %+v, %v; want ErrNotFound", sp, err)
	}
	if _, err := s.ReadSubpage(in.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused subpage's PDF was kept: err = %v", err)
	}

	for round := range 20 {
		chunk, _ := twoChunks(t, s)
		c, err := s.Chunk(chunk)
		if err != nil {
			t.Fatal(err)
		}
		in := cut(chunk, 1)
		var sp *store.Subpage
		var cutErr, deleteErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); sp, cutErr = s.CreateSubpage(in, []byte("%PDF-raced"), time.Hour) }()
		go func() { defer wg.Done(); _, deleteErr = s.DeleteDocument(c.DocumentID) }()
		wg.Wait()
		if deleteErr != nil {
			t.Fatalf("round %d: DeleteDocument: %v", round, deleteErr)
		}
		if cutErr != nil && !errors.Is(cutErr, store.ErrNotFound) {
			t.Fatalf("round %d: CreateSubpage: %v", round, cutErr)
		}
		if got, err := s.Subpage(in.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d: subpage %+v of a deleted document kept (cut returned %+v, %v)", round, got, sp, cutErr)
		}
		if _, err := s.ReadSubpage(in.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d: a deleted document's subpage PDF kept: err = %v", round, err)
		}
	}
}

// A subpage handed out again is extended to last its time to live from
// then; one expired, or gone, is not brought back.
func extendedSubpageLastsAsNew(t *testing.T, s Subpages) {
	c := newClock(s)
	chunk, _ := twoChunks(t, s)
	sp := mustCreateSubpage(t, s, cut(chunk, 1), "%PDF-a", time.Hour)
	c.Advance(50 * time.Minute)
	got, err := s.ExtendSubpage(sp.ID, time.Hour)
	if err != nil || got.ID != sp.ID || !got.ExpiresAt.Equal(c.Now().Add(time.Hour)) || !sameTime(got.CreatedAt, sp.CreatedAt) {
		t.Fatalf("ExtendSubpage = %+v, %v; want %s to expire an hour from now", got, err, sp.ID)
	}
	c.Advance(30 * time.Minute) // past its first expiry
	for _, read := range []func() (*store.Subpage, error){
		func() (*store.Subpage, error) { return s.SubpageFor(chunk, 1) },
		func() (*store.Subpage, error) { return s.Subpage(sp.ID) },
	} {
		if got, err := read(); err != nil || got.Expired(c.Now()) || !got.ExpiresAt.Equal(c.Now().Add(30*time.Minute)) {
			t.Fatalf("extended subpage read back = %+v, %v", got, err)
		}
	}
	if n, err := s.SweepSubpages(); n != 0 || err != nil {
		t.Fatalf("SweepSubpages of an extended subpage = %d, %v; want 0", n, err)
	}
	// Another cut of the chunk still takes the extended one.
	if again, err := s.CreateSubpage(cut(chunk, 1), []byte("%PDF-b"), time.Hour); err != nil || again.ID != sp.ID {
		t.Fatalf("CreateSubpage over an extended subpage = %+v, %v; want %s", again, err, sp.ID)
	}
	c.Advance(time.Hour)
	if got, err := s.ExtendSubpage(sp.ID, time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ExtendSubpage of an expired subpage = %+v, %v; want ErrNotFound", got, err)
	}
	if got, err := s.ExtendSubpage("sub_nope", time.Hour); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ExtendSubpage(unknown) = %+v, %v; want ErrNotFound", got, err)
	}
}
