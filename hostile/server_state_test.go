//go:build hostile

package hostile

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/testpdf"
)

// The fairness attack's backlog: ten PDFs of noiseSide² pixels of noise on
// 4-inch pages (1,200 pixels a side at OCR's 300 dpi), noisePages each;
// every page goes to OCR and takes half a second or more of Tesseract's
// time: a minute of work for two workers, read in turn, first come first
// served, would keep the other tenant waiting past its bound.
const (
	noiseDocs  = 10
	noisePages = 12
	noiseSide  = 400
)

// Finding 4: one tenant's backlog stalls everyone's indexing. Project A
// uploads ten PDFs of twelve pages of scanned noise (OCR on every page);
// the other tenant's small text and one-page PDF are SUCCEEDED within
// tenantJobBound while A's are still being read.
func TestFairIndexing(t *testing.T) {
	s := newServer(t, "fairness", nil)
	defer s.kill9(t) // A's backlog is not waited for
	b := newTenant(t, s, "tenant-b", false)
	project, key := s.newProject(t, "scans")
	m := watchMemory(t, s)
	var jobs []string
	for i := range noiseDocs {
		var p pdfFile
		var pages []pageSpec
		for j := range noisePages {
			pages = append(pages, pageSpec{image: p.noiseImage(noiseSide, noiseSide, uint64(100*i+j))})
		}
		r := s.uploadFile(t, key, project, fmt.Sprintf("scan%d.pdf", i), p.pagesPDF(288, 288, pages))
		if r.status != http.StatusOK {
			t.Fatalf("scan %d: %d %s", i, r.status, truncated(r.body, 300))
		}
		jobs = append(jobs, r.str("job_id"))
	}
	// The backlog is under way: a scan is being read.
	s.waitJob(t, key, jobs[0], time.Minute, func(j map[string]any) bool { return j["status"] != "PENDING" })
	job, _ := b.works(t, s, "behind ten scans")
	// A small text may be indexed beside the workers; a PDF waits for
	// one, and is read next, not after A's backlog.
	start := time.Now()
	pdf := s.uploadFile(t, b.key, b.project, "note.pdf", testpdf.Pages([]string{"A one-page note of the other tenant about lighthouses."}))
	if pdf.status != http.StatusOK {
		t.Fatalf("the other tenant's PDF: %d %s", pdf.status, truncated(pdf.body, 300))
	}
	if j, _ := s.waitJob(t, b.key, pdf.str("job_id"), tenantJobBound, ended); j["status"] != "SUCCEEDED" {
		t.Fatalf("the other tenant's PDF: %v", j)
	}
	figure(t, "the other tenant's one-page PDF was SUCCEEDED %s after its upload (bound %s)", time.Since(start).Round(10*time.Millisecond), tenantJobBound)
	waiting := 0
	for _, id := range jobs {
		if !ended(s.job(t, key, id)) {
			waiting++
		}
	}
	figure(t, "the other tenant's text was SUCCEEDED %s after its upload; %d of the %d scans were still to be read after its PDF", job.Round(10*time.Millisecond), waiting, noiseDocs)
	if waiting == 0 {
		t.Errorf("the scans were all read before the other tenant's PDF: the backlog was too short to tell")
	}
	m.check(t, rssBound)
	s.checkAcknowledged(t)
}

// serverEnv is the server's environment beside the suite's: the Google
// OAuth client (its secret needs its id) and a secret any deployment might
// hold. secretEnv are those the extraction child must not have.
var (
	serverEnv = []string{
		"DOCSIFT_GOOGLE_CLIENT_ID=hostile-suite.apps.googleusercontent.com",
		"DOCSIFT_GOOGLE_CLIENT_SECRET=hostile-suite-google-secret",
		"AWS_SECRET_ACCESS_KEY=hostile-suite-aws-secret",
	}
	secretEnv = serverEnv[1:]
)

// Finding 8: the extraction child gets the server's whole environment,
// network and files. While a slow document is read, the child's
// /proc/PID/environ holds none of the server's secrets; and, as far as
// can be seen from outside, it is sandboxed: a seccomp filter (which
// refuses it sockets) and no file of the data dir open.
func TestExtractionChild(t *testing.T) {
	s := newServer(t, "environment", []string{"--max-document-text", "1GiB"}, serverEnv...)
	defer s.kill9(t)
	b := newTenant(t, s, "tenant-b", false)
	job := s.uploadFile(t, s.key, s.project, "glyphs.pdf", slowPDF()).str("job_id")
	reading(t, s, s.key, job)
	b.works(t, s, "while a slow document is read")
	for _, child := range children(s.pid) {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", child))
		if err != nil {
			t.Fatalf("reading the child's environment: %v", err)
		}
		n := bytes.Count(env, []byte{0})
		var found []string
		for _, secret := range secretEnv {
			name, value, _ := strings.Cut(secret, "=")
			if bytes.Contains(env, []byte(value)) {
				found = append(found, name)
			}
		}
		if len(found) > 0 {
			t.Errorf("the extraction child's environment (%d variables) holds %s", n, strings.Join(found, ", "))
		} else {
			figure(t, "the extraction child's environment: %d variables, none of the server's secrets", n)
		}

		seccomp, _ := procStatus(child, "Seccomp")
		noNewPrivs, _ := procStatus(child, "NoNewPrivs")
		if seccomp != "2" {
			t.Errorf("the extraction child runs without a seccomp filter (Seccomp: %s, NoNewPrivs: %s)", seccomp, noNewPrivs)
		} else {
			figure(t, "the extraction child runs under a seccomp filter (NoNewPrivs: %s)", noNewPrivs)
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", child))
		for _, fd := range fds {
			target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", child, fd.Name()))
			if err == nil && strings.HasPrefix(target, s.dir) {
				t.Errorf("the extraction child has %s of the data dir open", target)
			}
		}
	}
	if line := logLine(s.log(), "sandbox"); line != "" {
		figure(t, "the server's log at start: %s", line)
	}
	s.checkAcknowledged(t)
}

// logLine is the first line of log holding word, or "".
func logLine(log, word string) string {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, word) {
			return line
		}
	}
	return ""
}

// The many-owners attack: customers of one project, a document each.
const (
	owners = 1200
	// mappedSnapshots is the server's map budget for the attack
	// (--max-mapped-snapshots): by default it is half of what
	// vm.max_map_count leaves (some 30,000 here), which 1,200 owners do
	// not reach, so the attack sets a budget it does reach. The server
	// must keep to it, reading the snapshots past it into its heap, and
	// answer every owner all the same.
	mappedSnapshots = 200
	// mapsBound is the most memory maps the server may hold after a
	// restart with every owner's index loaded: the budget and what it
	// holds idle (about 80), whatever the number of owners, as a tenant
	// can always make more.
	mapsBound = mappedSnapshots + 150
)

// Finding 9: one memory map per owner. 1,200 customers with one document
// each, a restart, a query of each (so every index is loaded): the
// server's memory maps stay under mapsBound. (4bf25c7 has no
// --max-mapped-snapshots: it maps every owner.)
func TestManyOwners(t *testing.T) {
	s := newServer(t, "owners", []string{"--max-mapped-snapshots", fmt.Sprint(mappedSnapshots)})
	defer s.kill9(t)
	b := newTenant(t, s, "tenant-b", false)
	before := mapCount(t, s.pid)
	var (
		mu        sync.Mutex
		customers []string
		jobs      []string
		next      = make(chan int)
		wg        sync.WaitGroup
	)
	start := time.Now()
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				cr, err := s.try("POST", "/customer/create", s.key, map[string]any{"project_id": s.project, "name": fmt.Sprintf("customer %d", i)})
				if err != nil || cr.status != http.StatusOK {
					t.Errorf("customer %d: %d %s %v", i, cr.status, truncated(cr.body, 200), err)
					continue
				}
				c := cr.str("customer_id")
				r, err := s.try("POST", "/upload/text", s.key, map[string]any{"owner_id": c, "text": fmt.Sprintf("Customer %d keeps one note about its own harbour and tides.", i)})
				if err != nil || r.status != http.StatusOK {
					t.Errorf("upload for customer %d: %d %s %v", i, r.status, truncated(r.body, 200), err)
					continue
				}
				s.ack(s.key, r)
				mu.Lock()
				customers, jobs = append(customers, c), append(jobs, r.str("job_id"))
				mu.Unlock()
			}
		}()
	}
	for i := range owners {
		next <- i
	}
	close(next)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	for _, j := range jobs {
		s.waitJob(t, s.key, j, time.Minute, ended)
	}
	figure(t, "%d customers with a document each made and indexed in %s; %d memory maps before, %d after", owners, time.Since(start).Round(100*time.Millisecond), before, mapCount(t, s.pid))

	s.restart(t, false)
	m := watchMemory(t, s)
	for _, c := range customers {
		s.must(t, "POST", "/query/customer", s.key, map[string]any{"customer_id": c, "query": "harbour", "top_k": 1})
	}
	maps := mapCount(t, s.pid)
	figure(t, "after a restart and a query of each of %d customers the server holds %d memory maps (bound %d)", owners, maps, mapsBound)
	if maps > mapsBound {
		t.Errorf("%d memory maps for %d owners; want at most %d", maps, owners, mapsBound)
	}
	m.check(t, rssBound)
	b.works(t, s, "after the restart")
	s.checkAcknowledged(t)
}

// mapCount is the number of a process's memory maps.
func mapCount(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte{'\n'})
}
