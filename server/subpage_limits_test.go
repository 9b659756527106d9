package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docsift/docsift/store"
)

// chunksByPage uploads a numbered PDF of n pages for owner and returns a
// chunk of each page, by page.
func (e *env) chunksByPage(t *testing.T, key, owner string, n int) map[int]string {
	t.Helper()
	if j := e.uploadPDF(t, key, owner, "numbered.pdf", numberedPDF(n)); j.Status != store.StatusSucceeded {
		t.Fatalf("job: %+v", j)
	}
	chunks := map[int]string{}
	for page := 1; page <= n; page++ {
		q := e.query(t, key, "/query/customer", map[string]any{"customer_id": owner, "query": pageWord(page) + " things", "top_k": n})
		for _, c := range q.Chunks {
			if c.Page != nil && *c.Page == page {
				chunks[page] = c.ChunkID
				break
			}
		}
		if chunks[page] == "" {
			t.Fatalf("no chunk of page %d: %+v", page, q.Chunks)
		}
	}
	return chunks
}

func (e *env) subpageFiles(t *testing.T) (n int, bytes int64) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.dir, "subpages"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	for _, entry := range entries {
		info, err := entry.Info()
		if err != nil {
			t.Fatal(err)
		}
		n, bytes = n+1, bytes+info.Size()
	}
	return n, bytes
}

// Finding 5: every chunk × varience was a slice of its own, each a full
// copy of what its pages share (153 requests on one PDF wrote 2.2 GB). Now
// the requests that name the same pages, by any chunk and varience,
// share one slice and one file.
func TestSubpagesOfTheSamePagesShareOneSlice(t *testing.T) {
	var slices slicer
	e := newEnv(t, withMaxFileBytes(1<<20), withSlicer(&slices))
	owner := e.a.customers[0]
	const pages, maxV = 4, 4 // 20 requests, 9 runs of pages
	chunks := e.chunksByPage(t, e.a.key, owner, pages)
	var made atomic.Int32
	slices.set(func(slice func([]byte, int, int) ([]byte, error), data []byte, first, last int) ([]byte, error) {
		made.Add(1)
		return slice(data, first, last)
	})
	urls := map[[2]int]string{}
	requests := 0
	for page := 1; page <= pages; page++ {
		for v := 0; v <= maxV; v++ {
			r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": chunks[page], "owner_id": owner, "varience": v})
			requests++
			if r.status != http.StatusOK {
				t.Fatalf("page %d, varience %d: %s", page, v, r)
			}
			sp := decodeAs[apiSubpage](t, r)
			want := [2]int{max(page-v, 1), min(page+v, pages)}
			if got := [2]int{sp.FirstPage, sp.LastPage}; got != want {
				t.Fatalf("page %d, varience %d: pages %v, want %v", page, v, got, want)
			}
			if url, ok := urls[want]; ok && url != sp.SubpageURL {
				t.Fatalf("pages %v given two URLs: %s and %s", want, url, sp.SubpageURL)
			}
			urls[want] = sp.SubpageURL
		}
	}
	files, size := e.subpageFiles(t)
	t.Logf("%d requests: %d slices, %d files, %d bytes", requests, made.Load(), files, size)
	if int(made.Load()) != len(urls) || files != len(urls) {
		t.Errorf("%d requests for %d runs of pages made %d slices and %d files, want one of each a run", requests, len(urls), made.Load(), files)
	}
}

// An owner's live subpages have a disk budget: a slice past it is a 429
// naming the budget, with a Retry-After of when the first of them expires,
// and nothing is kept; the subpages there are still handed out, and room
// comes back as they expire.
func TestSubpageBudget(t *testing.T) {
	const budget = 3 << 10 // two subpages of a page, about
	e := newEnv(t, withMaxFileBytes(1<<20), func(o *envOptions) { o.cfg.SubpageBudget = budget })
	owner := e.a.customers[0]
	chunks := e.chunksByPage(t, e.a.key, owner, 4)
	var kept []apiSubpage
	var refused response
	for page := 1; page <= 4 && refused.status == 0; page++ {
		r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": chunks[page], "owner_id": owner, "varience": 0})
		switch r.status {
		case http.StatusOK:
			kept = append(kept, decodeAs[apiSubpage](t, r))
		default:
			refused = r
		}
	}
	if len(kept) == 0 || refused.status == 0 {
		t.Fatalf("%d subpages of a page each fit a %d-byte budget, and none was refused; want some of each", len(kept), budget)
	}
	wantError(t, refused, http.StatusTooManyRequests, "the live subpages of owner "+owner, "of its subpage budget of 3 KiB", "a subpage expires 24 hours after it was last asked for")
	wait, err := strconv.Atoi(refused.header.Get("Retry-After"))
	if err != nil || wait <= 0 || wait > int((24*time.Hour).Seconds()) {
		t.Errorf("Retry-After %q, want the seconds until the first subpage expires", refused.header.Get("Retry-After"))
	}
	if files, size := e.subpageFiles(t); files != len(kept) || size > budget {
		t.Errorf("%d subpage files of %d bytes, want the %d kept, within %d bytes", files, size, len(kept), budget)
	}
	// A subpage there is still handed out.
	again := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": chunks[1], "owner_id": owner, "varience": 0})
	if again.status != http.StatusOK || decodeAs[apiSubpage](t, again).SubpageURL != kept[0].SubpageURL {
		t.Fatalf("a subpage there, over budget: %s", again)
	}
	// Another owner has a budget of its own.
	other := e.a.customers[1]
	otherChunks := e.chunksByPage(t, e.a.key, other, 1)
	if r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": otherChunks[1], "owner_id": other, "varience": 0}); r.status != http.StatusOK {
		t.Errorf("another owner's slice: %s", r)
	}
	// Once they expire, their room is free.
	e.clock.Advance(25 * time.Hour)
	if r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": chunks[4], "owner_id": owner, "varience": 0}); r.status != http.StatusOK {
		t.Errorf("a slice once the owner's subpages expired: %s", r)
	}
}

// A project keeps at most so many live subpages, whoever its owners.
func TestSubpagesPerProject(t *testing.T) {
	e := newEnv(t, withMaxFileBytes(1<<20), func(o *envOptions) { o.cfg.MaxSubpagesPerProject = 2 })
	owner := e.a.customers[0]
	chunks := e.chunksByPage(t, e.a.key, owner, 3)
	for page := 1; page <= 2; page++ {
		if r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": chunks[page], "owner_id": owner, "varience": 0}); r.status != http.StatusOK {
			t.Fatalf("slice %d: %s", page, r)
		}
	}
	e.unchanged(t, func() {
		r := e.postJSON(t, "/subpage", e.a.key, map[string]any{"chunk_id": chunks[3], "owner_id": owner, "varience": 0})
		wantError(t, r, http.StatusTooManyRequests, "project "+e.a.projectID+" keeps 2 live subpages, as many as a project may keep")
		if r.header.Get("Retry-After") == "" {
			t.Error("no Retry-After")
		}
	})
	// Another project counts its own.
	b := e.chunksByPage(t, e.b.key, e.b.customers[0], 1)
	if r := e.postJSON(t, "/subpage", e.b.key, map[string]any{"chunk_id": b[1], "owner_id": e.b.customers[0], "varience": 0}); r.status != http.StatusOK {
		t.Errorf("another project's slice: %s", r)
	}
}
