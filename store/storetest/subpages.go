package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/store"
)

// Subpages is the slice of small PDFs sliced from a document's pages, on
// top of Chunks: a subpage is sliced from a document that exists, and goes with
// it.
type Subpages interface {
	Chunks
	store.SubpageStore
}

// RunSubpages runs every test of the Subpages slice, each on a new store.
func RunSubpages(t *testing.T, open func(t *testing.T) Subpages) {
	t.Run("SubpagesReuseAndSweep", func(t *testing.T) { subpagesReuseAndSweep(t, open(t)) })
	t.Run("ExpiredSubpageReplaced", func(t *testing.T) { expiredSubpageReplaced(t, open(t)) })
	t.Run("ConcurrentSlicesShareOneSubpage", func(t *testing.T) { concurrentSlicesShareOne(t, open(t)) })
	t.Run("NoSubpageOfADeletedDocument", func(t *testing.T) { noSubpageOfADeletedDocument(t, open(t)) })
	t.Run("DeletedDocumentTakesEverySubpage", func(t *testing.T) { deletedDocumentTakesEverySubpage(t, open(t)) })
	t.Run("ExtendedSubpageLastsAsNew", func(t *testing.T) { extendedSubpageLastsAsNew(t, open(t)) })
	t.Run("SubpageFileSeeks", func(t *testing.T) { subpageFileSeeks(t, open(t)) })
	t.Run("SubpageLimits", func(t *testing.T) { subpageLimits(t, open(t)) })
}

// twoDocuments writes two documents of alice's and returns their ids.
func twoDocuments(t *testing.T, s Subpages) (string, string) {
	t.Helper()
	a, _ := upload(t, s, "alice", "manual.pdf", "%PDF-manual")
	b, _ := upload(t, s, "alice", "guide.pdf", "%PDF-guide")
	return a.ID, b.ID
}

func sameSubpage(a, b *store.Subpage) bool {
	return a.ID == b.ID && a.ProjectID == b.ProjectID && a.OwnerID == b.OwnerID && a.DocumentID == b.DocumentID &&
		a.FirstPage == b.FirstPage && a.LastPage == b.LastPage && a.Size == b.Size && a.FileName == b.FileName &&
		sameTime(a.CreatedAt, b.CreatedAt) && sameTime(a.ExpiresAt, b.ExpiresAt)
}

// pages is a subpage of alice's, in project prj_test, of a document's
// pages first to last.
func pages(documentID string, first, last int) store.Subpage {
	return store.Subpage{ID: store.NewSubpageID(), ProjectID: "prj_test", OwnerID: "alice", DocumentID: documentID,
		FirstPage: first, LastPage: last, FileName: "manual.pdf"}
}

func mustCreateSubpage(t *testing.T, s Subpages, sp store.Subpage, data string, ttl time.Duration) *store.Subpage {
	t.Helper()
	got, err := s.CreateSubpage(sp, []byte(data), ttl, store.SubpageLimits{})
	if err != nil {
		t.Fatalf("CreateSubpage(%s, %d-%d): %v", sp.DocumentID, sp.FirstPage, sp.LastPage, err)
	}
	return got
}

// readSubpage reads a subpage's PDF whole through OpenSubpage.
func readSubpage(s Subpages, id string) (string, error) {
	f, err := s.OpenSubpage(id)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	return string(data), err
}

func subpagesReuseAndSweep(t *testing.T, s Subpages) {
	docA, docB := twoDocuments(t, s)
	c := newClock(s)
	in := pages(docA, 3, 5)
	sp := mustCreateSubpage(t, s, in, "%PDF-a", time.Hour)
	if sp.ID != in.ID || !strings.HasPrefix(sp.ID, store.PrefixSubpage) || sp.OwnerID != "alice" || sp.DocumentID != docA ||
		sp.FirstPage != 3 || sp.LastPage != 5 || sp.Size != int64(len("%PDF-a")) || sp.FileName != "manual.pdf" ||
		!sp.CreatedAt.Equal(c.Now()) || !sp.ExpiresAt.Equal(c.Now().Add(time.Hour)) {
		t.Fatalf("created subpage = %+v from %+v", sp, in)
	}
	// A second slice of the same pages keeps the first.
	c.Advance(time.Minute)
	again, err := s.CreateSubpage(pages(docA, 3, 5), []byte("%PDF-b"), time.Hour, store.SubpageLimits{})
	if err != nil || !sameSubpage(again, sp) {
		t.Fatalf("second create = %+v, %v; want the first %+v", again, err, sp)
	}
	// Other pages, or the same pages of another document, are another
	// subpage.
	wider := mustCreateSubpage(t, s, pages(docA, 2, 5), "%PDF-wider", 2*time.Hour)
	other := mustCreateSubpage(t, s, pages(docB, 3, 5), "%PDF-other", 2*time.Hour)
	if wider.ID == sp.ID || other.ID == sp.ID || wider.ID == other.ID {
		t.Fatalf("subpages %s, %s, %s: want three", sp.ID, wider.ID, other.ID)
	}
	if got, err := s.SubpageFor(docA, 3, 5); err != nil || !sameSubpage(got, sp) {
		t.Fatalf("SubpageFor = %+v, %v; want %+v", got, err, sp)
	}
	if got, err := s.Subpage(sp.ID); err != nil || !sameSubpage(got, sp) {
		t.Fatalf("Subpage = %+v, %v; want %+v", got, err, sp)
	}
	for id, want := range map[string]string{sp.ID: "%PDF-a", wider.ID: "%PDF-wider", other.ID: "%PDF-other"} {
		if data, err := readSubpage(s, id); err != nil || data != want {
			t.Fatalf("read subpage %s = %q, %v; want %q", id, data, err, want)
		}
	}
	for _, r := range [][2]int{{3, 4}, {4, 5}, {3, 6}} {
		if _, err := s.SubpageFor(docA, r[0], r[1]); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("SubpageFor(pages %d-%d, never sliced): err = %v, want ErrNotFound", r[0], r[1], err)
		}
	}
	if _, err := s.Subpage("sub_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Subpage(unknown): err = %v, want ErrNotFound", err)
	}
	if _, err := s.OpenSubpage("sub_nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("OpenSubpage(unknown): err = %v, want ErrNotFound", err)
	}
	if n, err := s.SweepSubpages(); n != 0 || err != nil {
		t.Fatalf("SweepSubpages of live subpages = %d, %v; want 0", n, err)
	}

	c.t = sp.ExpiresAt
	if _, err := s.SubpageFor(docA, 3, 5); !errors.Is(err, store.ErrNotFound) {
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
	if _, err := s.OpenSubpage(sp.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("PDF survived the sweep: err = %v", err)
	}
	if got, err := s.SubpageFor(docA, 2, 5); err != nil || got.ID != wider.ID {
		t.Fatalf("the sweep took a live subpage: %+v, %v", got, err)
	}
}

func expiredSubpageReplaced(t *testing.T, s Subpages) {
	docA, _ := twoDocuments(t, s)
	c := newClock(s)
	old := mustCreateSubpage(t, s, pages(docA, 1, 3), "%PDF-old", time.Hour)
	c.Advance(2 * time.Hour)
	fresh := mustCreateSubpage(t, s, pages(docA, 1, 3), "%PDF-new", time.Hour)
	if fresh.ID == old.ID || !fresh.CreatedAt.Equal(c.Now()) {
		t.Fatalf("slice of an expired subpage's pages = %+v; want a new one", fresh)
	}
	if got, err := s.SubpageFor(docA, 1, 3); err != nil || got.ID != fresh.ID {
		t.Fatalf("SubpageFor = %+v, %v; want the new %s", got, err, fresh.ID)
	}
	if data, err := readSubpage(s, fresh.ID); err != nil || data != "%PDF-new" {
		t.Fatalf("read new subpage = %q, %v", data, err)
	}
	if n, err := s.SweepSubpages(); n != 1 || err != nil {
		t.Fatalf("SweepSubpages = %d, %v; want the old one only", n, err)
	}
	if got, err := s.SubpageFor(docA, 1, 3); err != nil || got.ID != fresh.ID {
		t.Fatalf("after the sweep, SubpageFor = %+v, %v; want the new %s", got, err, fresh.ID)
	}
	if _, err := s.Subpage(old.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the old subpage survived the sweep: err = %v", err)
	}
}

// Slices of the same pages asked for at once, as by requests on several
// nodes, all get the same subpage and its PDF.
func concurrentSlicesShareOne(t *testing.T, s Subpages) {
	docA, _ := twoDocuments(t, s)
	newClock(s)
	const slicers = 8
	in := make([]store.Subpage, slicers)
	got := make([]*store.Subpage, slicers)
	errs := make([]error, slicers)
	var wg sync.WaitGroup
	for i := range slicers {
		in[i] = pages(docA, 2, 4)
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = s.CreateSubpage(in[i], []byte(fmt.Sprint("%PDF-", i)), time.Hour, store.SubpageLimits{})
		}()
	}
	wg.Wait()
	winner := -1
	for i := range slicers {
		if errs[i] != nil {
			t.Fatalf("slicer %d: %v", i, errs[i])
		}
		if got[i].ID != got[0].ID {
			t.Fatalf("slicers 0 and %d got subpages %s and %s; want one", i, got[0].ID, got[i].ID)
		}
		if in[i].ID == got[0].ID {
			winner = i
		} else if _, err := s.Subpage(in[i].ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("slicer %d's dropped subpage was kept: err = %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatalf("subpage %s is none of the slicers'", got[0].ID)
	}
	if data, err := readSubpage(s, got[0].ID); err != nil || data != fmt.Sprint("%PDF-", winner) {
		t.Fatalf("read subpage = %q, %v; want slicer %d's PDF", data, err, winner)
	}
}

// A subpage is never kept for a document deleted before it was stored,
// nor while it was: the PDF sliced from a deleted document's pages would
// be served, without a key, until it expired. Slices and deletes race here
// as a delete during a slice does.
func noSubpageOfADeletedDocument(t *testing.T, s Subpages) {
	newClock(s)
	doc, _ := twoDocuments(t, s)
	if _, err := s.DeleteDocument(doc); err != nil {
		t.Fatal(err)
	}
	in := pages(doc, 1, 2)
	if sp, err := s.CreateSubpage(in, []byte("%PDF-late"), time.Hour, store.SubpageLimits{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("CreateSubpage of a deleted document = %+v, %v; want ErrNotFound", sp, err)
	}
	if _, err := s.OpenSubpage(in.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused subpage's PDF was kept: err = %v", err)
	}

	for round := range 20 {
		doc, _ := twoDocuments(t, s)
		in := pages(doc, 1, 2)
		var sp *store.Subpage
		var sliceErr, deleteErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			sp, sliceErr = s.CreateSubpage(in, []byte("%PDF-raced"), time.Hour, store.SubpageLimits{})
		}()
		go func() { defer wg.Done(); _, deleteErr = s.DeleteDocument(doc) }()
		wg.Wait()
		if deleteErr != nil {
			t.Fatalf("round %d: DeleteDocument: %v", round, deleteErr)
		}
		if sliceErr != nil && !errors.Is(sliceErr, store.ErrNotFound) {
			t.Fatalf("round %d: CreateSubpage: %v", round, sliceErr)
		}
		if got, err := s.Subpage(in.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d: subpage %+v of a deleted document kept (slice returned %+v, %v)", round, got, sp, sliceErr)
		}
		if _, err := s.OpenSubpage(in.ID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("round %d: a deleted document's subpage PDF kept: err = %v", round, err)
		}
	}
}

// A deleted document takes every subpage of its pages with it, the
// expired ones a new slice replaced included, and no other document's.
func deletedDocumentTakesEverySubpage(t *testing.T, s Subpages) {
	c := newClock(s)
	docA, docB := twoDocuments(t, s)
	replaced := mustCreateSubpage(t, s, pages(docA, 1, 3), "%PDF-replaced", time.Hour)
	c.Advance(2 * time.Hour)
	subs := []*store.Subpage{
		replaced,
		mustCreateSubpage(t, s, pages(docA, 1, 3), "%PDF-new", time.Hour),
		mustCreateSubpage(t, s, pages(docA, 2, 2), "%PDF-page", time.Hour),
	}
	kept := mustCreateSubpage(t, s, pages(docB, 1, 3), "%PDF-kept", time.Hour)
	if _, err := s.DeleteDocument(docA); err != nil {
		t.Fatal(err)
	}
	for _, sp := range subs {
		if _, err := s.Subpage(sp.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("subpage %d-%d of a deleted document kept: err = %v", sp.FirstPage, sp.LastPage, err)
		}
		if _, err := s.OpenSubpage(sp.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("PDF of a deleted document's subpage kept: err = %v", err)
		}
	}
	if data, err := readSubpage(s, kept.ID); err != nil || data != "%PDF-kept" {
		t.Errorf("another document's subpage = %q, %v", data, err)
	}
	if u, err := s.SubpageUsage("prj_test", "alice"); err != nil || u.ProjectSubpages != 1 || u.OwnerBytes != kept.Size {
		t.Errorf("usage after the delete = %+v, %v; want the other document's one subpage", u, err)
	}
}

// A subpage handed out again is extended to last its time to live from
// then; one expired, or gone, is not brought back.
func extendedSubpageLastsAsNew(t *testing.T, s Subpages) {
	c := newClock(s)
	doc, _ := twoDocuments(t, s)
	sp := mustCreateSubpage(t, s, pages(doc, 1, 3), "%PDF-a", time.Hour)
	c.Advance(50 * time.Minute)
	got, err := s.ExtendSubpage(sp.ID, time.Hour)
	if err != nil || got.ID != sp.ID || !got.ExpiresAt.Equal(c.Now().Add(time.Hour)) || !sameTime(got.CreatedAt, sp.CreatedAt) {
		t.Fatalf("ExtendSubpage = %+v, %v; want %s to expire an hour from now", got, err, sp.ID)
	}
	c.Advance(30 * time.Minute) // past its first expiry
	for _, read := range []func() (*store.Subpage, error){
		func() (*store.Subpage, error) { return s.SubpageFor(doc, 1, 3) },
		func() (*store.Subpage, error) { return s.Subpage(sp.ID) },
	} {
		if got, err := read(); err != nil || got.Expired(c.Now()) || !got.ExpiresAt.Equal(c.Now().Add(30*time.Minute)) {
			t.Fatalf("extended subpage read back = %+v, %v", got, err)
		}
	}
	// Still live, it still counts.
	if u, err := s.SubpageUsage("prj_test", "alice"); err != nil || u.ProjectSubpages != 1 || u.OwnerBytes != sp.Size ||
		!u.NextOwnerExpiry.Equal(c.Now().Add(30*time.Minute)) {
		t.Fatalf("usage of an extended subpage = %+v, %v", u, err)
	}
	if n, err := s.SweepSubpages(); n != 0 || err != nil {
		t.Fatalf("SweepSubpages of an extended subpage = %d, %v; want 0", n, err)
	}
	// Another slice of the pages still takes the extended one.
	if again, err := s.CreateSubpage(pages(doc, 1, 3), []byte("%PDF-b"), time.Hour, store.SubpageLimits{}); err != nil || again.ID != sp.ID {
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

// A subpage's file is read in pieces from wherever a viewer asks, as a
// Range request does, and holds exactly the bytes stored.
func subpageFileSeeks(t *testing.T, s Subpages) {
	newClock(s)
	doc, _ := twoDocuments(t, s)
	data := make([]byte, 700<<10) // more than a piece of any store
	for i := range data {
		data[i] = byte(i * 7 % 251)
	}
	sp, err := s.CreateSubpage(pages(doc, 1, 9), data, time.Hour, store.SubpageLimits{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.OpenSubpage(sp.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if end, err := f.Seek(0, io.SeekEnd); err != nil || end != int64(len(data)) {
		t.Fatalf("Seek to the end = %d, %v; want %d", end, err, len(data))
	}
	for _, r := range [][2]int{{0, 5}, {300 << 10, 1000}, {(256 << 10) - 3, 10}, {len(data) - 7, 7}, {10, 600 << 10}} {
		if _, err := f.Seek(int64(r[0]), io.SeekStart); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, r[1])
		if _, err := io.ReadFull(f, got); err != nil || !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
			t.Fatalf("bytes %d+%d: %v, or not the bytes stored", r[0], r[1], err)
		}
	}
	if _, err := f.Seek(int64(len(data)), io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if n, err := f.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("read past the end = %d, %v; want io.EOF", n, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if all, err := io.ReadAll(f); err != nil || !bytes.Equal(all, data) {
		t.Fatalf("read whole: %d bytes, %v; want the %d stored", len(all), err, len(data))
	}
}

// The limits count a project's live subpages and an owner's bytes: a
// create past them is refused, changing nothing, and room comes back as
// subpages expire. Other projects and owners are not touched.
func subpageLimits(t *testing.T, s Subpages) {
	c := newClock(s)
	doc, _ := twoDocuments(t, s)
	limits := store.SubpageLimits{OwnerBytes: 10, ProjectSubpages: 3}
	slice := func(owner, project string, first int, data string) (*store.Subpage, error) {
		sp := pages(doc, first, first)
		sp.OwnerID, sp.ProjectID = owner, project
		return s.CreateSubpage(sp, []byte(data), time.Hour, limits)
	}
	first, err := slice("alice", "prj_test", 1, "123456")
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	if _, err := slice("alice", "prj_test", 2, "1234"); err != nil { // 10 bytes: at the budget, not over
		t.Fatal(err)
	}
	if sp, err := slice("alice", "prj_test", 3, "1"); !errors.Is(err, store.ErrSubpageBudget) {
		t.Fatalf("a slice over the owner's budget = %+v, %v; want ErrSubpageBudget", sp, err)
	}
	if _, err := s.SubpageFor(doc, 3, 3); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused slice was kept: %v", err)
	}
	// The same pages again take the subpage there is, over budget or not.
	if again, err := slice("alice", "prj_test", 1, "123456"); err != nil || again.ID != first.ID {
		t.Fatalf("the pages of a live subpage, at the budget = %+v, %v; want %s", again, err, first.ID)
	}
	u, err := s.SubpageUsage("prj_test", "alice")
	if err != nil || u.ProjectSubpages != 2 || u.OwnerBytes != 10 || !u.NextOwnerExpiry.Equal(first.ExpiresAt) || !u.NextProjectExpiry.Equal(first.ExpiresAt) {
		t.Fatalf("usage = %+v, %v; want 2 subpages, 10 bytes, the first expiring at %s", u, err, first.ExpiresAt)
	}
	// Another owner of the project has a budget of its own, but shares
	// the project's count.
	if _, err := slice("bob", "prj_test", 4, "123456789"); err != nil {
		t.Fatalf("another owner's slice: %v", err)
	}
	if sp, err := slice("carol", "prj_test", 5, "1"); !errors.Is(err, store.ErrSubpageQuota) {
		t.Fatalf("a slice over the project's count = %+v, %v; want ErrSubpageQuota", sp, err)
	}
	if u, err := s.SubpageUsage("prj_test", "carol"); err != nil || u.ProjectSubpages != 3 || u.OwnerBytes != 0 || !u.NextOwnerExpiry.IsZero() {
		t.Fatalf("usage of an owner with none = %+v, %v", u, err)
	}
	// Another project has a count of its own.
	if _, err := slice("dave", "prj_other", 6, "1"); err != nil {
		t.Fatalf("another project's slice: %v", err)
	}
	// Expired, a subpage frees its room before it is swept.
	c.t = first.ExpiresAt
	if _, err := slice("alice", "prj_test", 3, "123456"); err != nil {
		t.Fatalf("a slice once a subpage expired: %v", err)
	}
	if u, err := s.SubpageUsage("prj_test", "alice"); err != nil || u.ProjectSubpages != 3 || u.OwnerBytes != 10 {
		t.Fatalf("usage after an expiry = %+v, %v; want 3 subpages, 10 bytes of alice's", u, err)
	}
}
