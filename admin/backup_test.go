package admin_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docsift/docsift/admin"
	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// node is a data dir with its store, engine and admin socket, as a running
// server has them.
type node struct {
	dir    string
	store  *bolt.Store
	engine *ingest.Engine
	search *search.Service
}

func startNode(t *testing.T, dir string) *node {
	t.Helper()
	st, err := bolt.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	e := ingest.New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), ingest.Config{Workers: 2}, log)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	stop, err := admin.Listen(dir, st, e, nil)
	if err != nil {
		t.Fatal(err)
	}
	n := &node{dir: dir, store: st, engine: e, search: search.New(e, st, llm.NewExtractive(), nil, log)}
	t.Cleanup(func() {
		stop()
		e.Shutdown(context.Background())
		st.Close()
	})
	return n
}

// word is a token that occurs in one document only.
func word(i int) string { return fmt.Sprintf("zq%04dx", i) }

func (n *node) upload(t *testing.T, owner string, i int) string {
	t.Helper()
	text := fmt.Sprintf("Document %d is about the codeword %s and the harbour of town %d. ", i, word(i), i%7)
	job, _, err := n.engine.Submit(ingest.Upload{ProjectID: owner, OwnerID: owner, Name: fmt.Sprintf("doc-%d.txt", i), Data: []byte(strings.Repeat(text, 3))})
	if err != nil {
		t.Fatal(err)
	}
	return job.ID
}

func (n *node) wait(t *testing.T, jobID string) *store.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	j, err := n.engine.WaitJob(ctx, jobID)
	if err != nil {
		t.Fatalf("job %s: %v", jobID, err)
	}
	return j
}

// results is what a query answers, reduced to what must survive a restore.
func (n *node) results(t *testing.T, owner, query string) []string {
	t.Helper()
	res, _, err := n.search.Search(context.Background(), owner, query, 10)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = fmt.Sprintf("%s %s %.6f", r.Chunk.ID, r.DocumentName, r.Score)
	}
	return out
}

func backupThroughSocket(t *testing.T, dir string) []byte {
	t.Helper()
	c, err := admin.Dial(dir)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	m, err := c.Backup(context.Background(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) == 0 || m.Files[0].Name != bolt.DBFileName {
		t.Fatalf("manifest %+v: want the database first", m)
	}
	return buf.Bytes()
}

func TestBackupRestoreAnswersTheSame(t *testing.T) {
	src := startNode(t, t.TempDir())
	const owner = "prj_backup"
	for i := range 30 {
		src.wait(t, src.upload(t, owner, i))
	}
	queries := []string{word(3), word(17) + " harbour", "codeword town 4", "harbour"}
	want := map[string][]string{}
	for _, q := range queries {
		want[q] = src.results(t, owner, q)
	}
	// A subpage's URL works after a restore: its PDF is backed up.
	seqs, err := src.store.OwnerSeqs(owner)
	if err != nil || len(seqs) == 0 {
		t.Fatalf("owner seqs: %v, %v", seqs, err)
	}
	chunks, err := src.store.ChunksBySeq(seqs[:1])
	if err != nil {
		t.Fatal(err)
	}
	sp, err := src.store.CreateSubpage(store.Subpage{ID: store.NewSubpageID(), ProjectID: owner, OwnerID: owner, DocumentID: chunks[0].DocumentID,
		FirstPage: 1, LastPage: 1, FileName: "doc.pdf"}, []byte("%PDF-subpage"), time.Hour, store.SubpageLimits{})
	if err != nil {
		t.Fatal(err)
	}
	archive := backupThroughSocket(t, src.dir)

	dst := filepath.Join(t.TempDir(), "restored")
	m, aside, err := admin.Restore(bytes.NewReader(archive), dst, false)
	if err != nil || aside != "" {
		t.Fatalf("restore: %v (aside %q)", err, aside)
	}
	if len(m.Files) < 1 { // the database, which holds these small originals
		t.Errorf("manifest lists %d files", len(m.Files))
	}
	restored := startNode(t, dst)
	for _, q := range queries {
		if got := restored.results(t, owner, q); !reflect.DeepEqual(got, want[q]) {
			t.Errorf("query %q after restore:\n got %q\nwant %q", q, got, want[q])
		}
	}
	docs, _, err := restored.store.Documents(owner, "", 1000)
	if err != nil || len(docs) != 30 {
		t.Fatalf("restored documents: %d, %v", len(docs), err)
	}
	for _, d := range docs {
		if _, err := restored.store.ReadOriginal(&d); err != nil {
			t.Errorf("original of %s: %v", d.Name, err)
		}
	}
	f, err := restored.store.OpenSubpage(sp.ID)
	if err != nil {
		t.Fatalf("the subpage after restore: %v", err)
	}
	defer f.Close()
	if data, err := io.ReadAll(f); err != nil || string(data) != "%PDF-subpage" {
		t.Errorf("the subpage after restore: %q, %v", data, err)
	}
}

func TestBackupDuringIngest(t *testing.T) {
	src := startNode(t, t.TempDir())
	const owner = "prj_busy"
	first := src.upload(t, owner, 0)
	src.wait(t, first)

	// Uploads and deletes go on while the backup is taken.
	var wg sync.WaitGroup
	stop, busy := make(chan struct{}), make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i == 20 {
				close(busy)
			}
			id := src.upload(t, owner, i)
			if i%5 == 0 {
				j, _ := src.store.Job(id)
				src.engine.DeleteDocument(&store.Document{ID: j.DocumentID, OwnerID: owner})
			}
		}
	}()
	<-busy
	archive := backupThroughSocket(t, src.dir)
	close(stop)
	wg.Wait()

	dst := filepath.Join(t.TempDir(), "restored")
	if _, _, err := admin.Restore(bytes.NewReader(archive), dst, false); err != nil {
		t.Fatal(err)
	}
	restored := startNode(t, dst)
	docs, _, err := restored.store.Documents(owner, "", 1000)
	if err != nil || len(docs) < 2 {
		t.Fatalf("restored %d documents (%v)", len(docs), err)
	}
	for _, d := range docs {
		j := restored.wait(t, d.JobID)
		if j.Status != store.StatusSucceeded {
			t.Errorf("restored %s ended %s: %s", d.Name, j.Status, j.Error)
			continue
		}
		if _, err := restored.store.ReadOriginal(&d); err != nil {
			t.Errorf("original of %s is missing: %v", d.Name, err)
		}
		var i int
		fmt.Sscanf(d.Name, "doc-%d.txt", &i)
		if res := restored.results(t, owner, word(i)); len(res) == 0 || !strings.Contains(res[0], d.Name) {
			t.Errorf("query for %s's own word found %q", d.Name, res)
		}
	}
	// The source swept what its deletes left once the backup ended.
	if n, err := src.store.SweepFiles(); err != nil || n != 0 {
		t.Errorf("files left unswept after the backup: %d (%v)", n, err)
	}
}

func TestRestoreRefusesWhatItShould(t *testing.T) {
	src := startNode(t, t.TempDir())
	src.wait(t, src.upload(t, "prj_r", 1))
	archive := backupThroughSocket(t, src.dir)

	occupied := t.TempDir()
	os.WriteFile(filepath.Join(occupied, "keep.txt"), []byte("mine"), 0o600)
	if _, _, err := admin.Restore(bytes.NewReader(archive), occupied, false); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("restore over a non-empty dir: %v", err)
	}

	// A flipped byte in the database, a cut archive: refused, and the
	// target is left as it was.
	damaged := bytes.Clone(archive)
	damaged[2048] ^= 0xff
	cut := archive[:len(archive)/2]
	for name, a := range map[string][]byte{"damaged": damaged, "cut short": cut} {
		dst := filepath.Join(t.TempDir(), "d")
		if _, _, err := admin.Restore(bytes.NewReader(a), dst, false); err == nil {
			t.Errorf("%s archive restored", name)
		} else if name == "cut short" && !strings.Contains(err.Error(), "the backup is cut short: it ends inside ") {
			t.Errorf("a cut archive: %v", err)
		}
		if _, err := os.Stat(dst); !os.IsNotExist(err) {
			t.Errorf("%s archive left %s behind (%v)", name, dst, err)
		}
		if left, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".d.restoring-*")); len(left) > 0 {
			t.Errorf("%s archive left %v", name, left)
		}
	}
	// Not an archive at all: said in words, not in archive/tar's.
	_, _, err := admin.Restore(strings.NewReader(strings.Repeat("root:x:0:0:root:/root:/bin/bash\n", 40)), filepath.Join(t.TempDir(), "d"), false)
	if err == nil || !strings.Contains(err.Error(), "the file is not a docsift backup, or is damaged (invalid tar header)") || strings.Contains(err.Error(), "archive/tar") {
		t.Errorf("restoring a file that is not an archive: %v", err)
	}

	// A running server's dir is never restored over, force or not.
	if _, _, err := admin.Restore(bytes.NewReader(archive), src.dir, true); err == nil || !strings.Contains(err.Error(), "running") {
		t.Errorf("restore over a running server: %v", err)
	}

	// With force, the old contents move aside.
	m, aside, err := admin.Restore(bytes.NewReader(archive), occupied, true)
	if err != nil || m == nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(aside, "keep.txt")); err != nil || string(b) != "mine" {
		t.Errorf("moved-aside contents: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(occupied, bolt.DBFileName)); err != nil {
		t.Errorf("restored database: %v", err)
	}
	// Again at once (within the second that names what moves aside): the
	// restored contents move aside beside the first ones.
	_, again, err := admin.Restore(bytes.NewReader(archive), occupied, true)
	if err != nil || again == aside {
		t.Fatalf("a second restore over the same dir: %v (moved aside to %q, the first to %q)", err, again, aside)
	}
	if _, err := os.Stat(filepath.Join(again, bolt.DBFileName)); err != nil {
		t.Errorf("the second restore's moved-aside contents: %v", err)
	}
}
