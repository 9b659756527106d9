//go:build hostile

package hostile

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/testpdf"
)

// bombBound is how long a document over a limit may take to fail: its
// first page over --max-page-text, or its archive's first member over the
// unpacking ratio, is found in seconds.
const bombBound = 60 * time.Second

// namesLimit is what a job's error says when a document is over one of the
// limits on what reading it may cost.
var namesLimit = regexp.MustCompile(`limit|unpacks to more than`)

// session opens a single-tenant upload session of project and returns its
// link.
func (s *server) session(t *testing.T, key, project string) string {
	t.Helper()
	r := s.must(t, "POST", "/session/single-tenant", key, map[string]any{
		"project_id": project, "services": []string{"all"},
		"success_url": "https://example.com/done", "cancel_url": "https://example.com/cancel",
	})
	return r.str("url")
}

// sessionUpload uploads a file through a session link, as its holder
// would: no key, the owner taken from the link. 200 is recorded as
// acknowledged (under key, the project's, to look it up after).
func (s *server) sessionUpload(t *testing.T, link, key, name string, data []byte) reply {
	t.Helper()
	r := s.send(t, multipartRequest(t, link+"/upload", name, data, nil))
	if r.status == http.StatusOK {
		s.ack(key, r)
	}
	return r
}

// Finding 1: a small PDF whose pages draw millions of glyphs each, through
// a session link and through the API, and a DOCX whose document unpacks a
// thousandfold. The server stays under its memory bound, each job fails
// naming the limit, and the other tenant is served meanwhile and after.
func TestDocumentBombs(t *testing.T) {
	s, b := sharedServer(t)
	project, key := s.newProject(t, "bomber")
	link := s.session(t, key, project)
	m := watchMemory(t, s)

	// 2,000,000 glyphs a page, 200 pages: 400 MB of text in 34 KB.
	glyphs := testpdf.GlyphBomb(200, 2_000_000)
	// 48 MiB of spaces in one member, deflated to about 48 KiB.
	docx := docxBomb(t, 48<<20)
	type bomb struct {
		what string
		at   time.Time
		r    reply
	}
	var bombs []bomb
	upload := func(what string, up func() reply) {
		at := time.Now()
		r := up()
		if r.status != http.StatusOK {
			t.Fatalf("%s: upload refused with %d %s; the attack needs it taken", what, r.status, truncated(r.body, 300))
		}
		bombs = append(bombs, bomb{what, at, r})
	}
	upload("glyph bomb through a session link", func() reply { return s.sessionUpload(t, link, key, "glyphs.pdf", glyphs) })
	upload("glyph bomb through the API", func() reply { return s.uploadFile(t, key, project, "glyphs.pdf", glyphs) })
	upload("DOCX zip bomb", func() reply { return s.uploadFile(t, key, project, "bomb.docx", docx) })
	t.Logf("glyph bomb %d bytes, DOCX bomb %d bytes", len(glyphs), len(docx))
	// Failing this, the bombs are still followed, to see what they do.
	if _, _, err := b.served(t, s, "during the bombs"); err != nil {
		t.Error(err)
	}
	for _, bb := range bombs {
		j, _ := s.waitJob(t, key, bb.r.str("job_id"), bombBound, ended)
		took := time.Since(bb.at)
		msg, _ := j["error"].(string)
		if j["status"] != "FAILED" || !namesLimit.MatchString(msg) {
			t.Errorf("%s: the job ended %v %q %s after its upload; want FAILED naming the limit", bb.what, j["status"], msg, took)
			continue
		}
		figure(t, "%s FAILED within %s of its upload: %s", bb.what, took.Round(100*time.Millisecond), msg)
	}
	m.check(t, rssBound)
	b.works(t, s, "after the bombs")
	s.checkAcknowledged(t)
}

// Finding 1, the crash loop: a document whose reading the server does not
// survive (killed with SIGKILL twice while it reads the same document, as
// the group's limit would kill it) is FAILED at the next start and never
// read again, and the server goes on with the rest.
func TestDocumentThatKillsTheServerTwice(t *testing.T) {
	// The document limit raised so that reading takes long enough to be
	// caught at it; pages stay under the page limit.
	s := newServer(t, "crashloop", []string{"--max-document-text", "1GiB"})
	defer s.kill9(t)
	b := newTenant(t, s, "tenant-b", false)
	job := s.uploadFile(t, s.key, s.project, "glyphs.pdf", slowPDF()).str("job_id")
	if job == "" {
		t.Fatal("the upload was refused")
	}
	for round := 1; round <= 2; round++ {
		reading(t, s, s.key, job)
		s.kill9(t)
		t.Logf("killed with SIGKILL while reading the document, %d of 2", round)
		s.start(t)
	}
	m := watchMemory(t, s)
	j, took := s.waitJob(t, s.key, job, bombBound, ended)
	msg, _ := j["error"].(string)
	if j["status"] != "FAILED" || !strings.Contains(msg, "stopped the server") {
		t.Fatalf("after the second restart the document ended %v %q; want FAILED saying it stopped the server", j["status"], msg)
	}
	figure(t, "after two kills the document FAILED %s after the restart: %s", took.Round(100*time.Millisecond), msg)
	m.check(t, rssBound)
	b.works(t, s, "after the restarts")
	s.checkAcknowledged(t)
}

// slowPDF is a document that takes a server minutes to read with its
// document limit raised: 400 pages of 800,000 glyphs, each page under the
// page limit.
func slowPDF() []byte { return testpdf.GlyphBomb(400, 800_000) }

// reading waits until job is PROCESSING and the server has an extraction
// child: the document is being read.
func reading(t *testing.T, s *server, key, job string) {
	t.Helper()
	s.waitJob(t, key, job, bombBound, func(j map[string]any) bool {
		if j["status"] != "PROCESSING" {
			if ended(j) {
				t.Fatalf("the document ended before it could be caught being read: %v", j)
			}
			return false
		}
		return len(children(s.pid)) > 0
	})
}
