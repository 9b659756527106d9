//go:build hostile

package hostile

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The subpage attack's sizes: ten pages drawing one shared image of
// imageSide² bytes of noise (20 MB), so that every slice holds the whole
// image; the shared server's --subpage-budget (sharedFlags).
const (
	subpagePages  = 10
	imageSide     = 4500
	subpageBudget = 64 << 20
	// subpageReaders is how many clients fetch a subpage and stop reading.
	subpageReaders = 40
	// cutMargin is how long past --write-stall a stalled reader may stay
	// connected.
	cutMargin = 5 * time.Second
)

// Finding 5: subpages fill the disk and pin memory. A subpage of every
// chunk at several variences grows the data dir by at most the owner's
// budget (and the slices under way when it was reached), runs of pages asked
// for again share one file, and 40 clients that fetch a subpage and stop
// reading hold the server's memory under its bound and are cut after
// --write-stall.
func TestSubpages(t *testing.T) {
	s, b := sharedServer(t)
	project, key := s.newProject(t, "subpages")
	var p pdfFile
	img := p.noiseImage(imageSide, imageSide, 5)
	var pages []pageSpec
	for i := range subpagePages {
		pages = append(pages, pageSpec{text: fmt.Sprintf("Harbour chart page %d, shared picture of the coast.", i+1), image: img})
	}
	doc := p.pagesPDF(400, 400, pages)
	up := s.uploadFile(t, key, project, "charts.pdf", doc)
	if up.status != http.StatusOK {
		t.Fatalf("upload: %d %s", up.status, truncated(up.body, 300))
	}
	if j, _ := s.waitJob(t, key, up.str("job_id"), time.Minute, ended); j["status"] != "SUCCEEDED" {
		t.Fatalf("the PDF of shared images: %v", j)
	}
	q := s.must(t, "POST", "/query/project", key, map[string]any{"project_id": project, "query": "harbour chart coast", "top_k": 50}).json()
	chunkOf := map[int]string{} // page → a chunk on it
	for _, c := range q["chunks"].([]any) {
		c := c.(map[string]any)
		if page, ok := c["page"].(float64); ok {
			chunkOf[int(page)] = c["chunk_id"].(string)
		}
	}
	if len(chunkOf) != subpagePages {
		t.Fatalf("found chunks on %d pages of %d", len(chunkOf), subpagePages)
	}
	m := watchMemory(t, s)
	before := dirSize(t, s.dir)
	subpage := func(page, varience int) reply {
		return s.do(t, "POST", "/subpage", key, map[string]any{"chunk_id": chunkOf[page], "owner_id": project, "varience": varience})
	}

	// Two slices at once, as two clients would ask: pages 1-3 (page 1 with
	// varience 2) and 4-6 (page 5 with varience 1).
	var a, d reply
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		a, _ = s.try("POST", "/subpage", key, map[string]any{"chunk_id": chunkOf[1], "owner_id": project, "varience": 2})
	}()
	go func() {
		defer wg.Done()
		d, _ = s.try("POST", "/subpage", key, map[string]any{"chunk_id": chunkOf[5], "owner_id": project, "varience": 1})
	}()
	wg.Wait()
	if a.status != http.StatusOK || d.status != http.StatusOK {
		t.Fatalf("the first subpages: %d %s; %d %s", a.status, truncated(a.body, 200), d.status, truncated(d.body, 200))
	}
	figure(t, "two slices at once of a %s PDF took the server's resident memory to %s; %s on disk",
		mib(int64(len(doc))), mib(m.peak()), mib(dirSize(t, s.dir)-before))
	// Page 2 with varience 1 is pages 1-3 again: the same slice, the same
	// file.
	c := subpage(2, 1)
	if c.status != http.StatusOK {
		t.Fatalf("pages 1-3 again: %d %s", c.status, truncated(c.body, 200))
	}
	if a.str("subpage_url") != c.str("subpage_url") {
		t.Errorf("pages 1-3 sliced twice: %s and %s", a.str("subpage_url"), c.str("subpage_url"))
	}

	// Then every chunk at variences 0-3, until the budget refuses.
	bound := subpageBudget + 2*int64(len(doc))
	var made, refused, shared int
	seen := map[string]bool{a.str("subpage_url"): true, d.str("subpage_url"): true}
slices:
	for v := range 4 {
		for page := 1; page <= subpagePages; page++ {
			r := subpage(page, v)
			switch {
			case r.status == http.StatusTooManyRequests:
				refused++
			case r.status != http.StatusOK:
				t.Fatalf("subpage of page %d varience %d: %d %s", page, v, r.status, truncated(r.body, 300))
			case seen[r.str("subpage_url")]:
				shared++
			default:
				seen[r.str("subpage_url")] = true
				made++
			}
			if grown := dirSize(t, s.dir) - before; grown > bound {
				// The readers below are another attack: on to them.
				t.Errorf("after %d slices the data dir grew by %s, over the budget and two slices (%s)", made+1, mib(grown), mib(bound))
				break slices
			}
		}
	}
	grown := dirSize(t, s.dir) - before
	figure(t, "40 subpage requests: %d new slices, %d shared an earlier slice, %d refused with 429; the data dir grew by %s (bound %s: the budget and two slices)",
		made, shared, refused, mib(grown), mib(bound))
	if refused == 0 && !t.Failed() {
		t.Errorf("no subpage was refused: the budget of %s was not reached", mib(subpageBudget))
	}
	m.check(t, rssBound)

	// 40 clients fetch the subpage and never read it.
	u := a.str("subpage_url")
	path := u[strings.Index(u, "/subpages/"):]
	m = watchMemory(t, s)
	readers := map[uint16]bool{}
	for range subpageReaders {
		conn, err := dialStalled(nil, s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, s.addr)
		readers[netip.MustParseAddrPort(conn.LocalAddr().String()).Port()] = true
	}
	isReader := func(remote netip.AddrPort) bool { return readers[remote.Port()] }
	s.waitBlocked(t, subpageReaders, 10*time.Second, isReader)
	blocked := time.Now()
	b.works(t, s, "while 40 readers stall")
	took := s.waitServerEnds(t, blocked, writeStall+cutMargin, isReader)
	figure(t, "%d readers that stopped reading were cut %s after the server was blocked writing to them all (--write-stall %s)", subpageReaders, took.Round(100*time.Millisecond), writeStall)
	m.check(t, rssBound) // while the readers were connected
	b.works(t, s, "after the subpages")
	s.checkAcknowledged(t)
}

// dirSize is the disk the files under dir take: their blocks, not their
// lengths, as the bbolt file is longer than what is written of it.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				if st, ok := info.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				}
			}
		}
		return nil
	})
	return n
}
