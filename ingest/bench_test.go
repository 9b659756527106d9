package ingest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// msmarcoCorpus is the shared MS MARCO sample `docsift bench scale
// --corpus` uploads.
const msmarcoCorpus = "../../shared/data/msmarco-5k/corpus.jsonl"

// BenchmarkIngestSmallTexts is the engine's share of `docsift bench scale
// --corpus` without HTTP: the MS MARCO passages submitted by 32 uploaders
// at once to a durable bbolt store and the built-in embedder, until every
// job has SUCCEEDED. One op is one passage; run it with -benchmem and
// -cpuprofile or -memprofile to see what a small document costs.
func BenchmarkIngestSmallTexts(b *testing.B) {
	texts := readPassages(b, msmarcoCorpus)
	dir := b.TempDir()
	st, err := bolt.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	p, _, err := st.CreateProject("bench")
	if err != nil {
		b.Fatal(err)
	}
	eng := ingest.New(st, llm.NewBuiltin(), filepath.Join(dir, "index"), ingest.Config{}, slog.New(slog.DiscardHandler))
	if err := eng.Start(); err != nil {
		b.Fatal(err)
	}
	defer eng.Shutdown(context.Background())
	const uploaders = 32
	next := make(chan int)
	jobs := make([]string, b.N)
	var wg sync.WaitGroup
	b.ResetTimer()
	for range uploaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				job, _, err := eng.Submit(ingest.Upload{ProjectID: p.ID, OwnerID: p.ID, Name: "passage", Data: []byte(texts[i%len(texts)])})
				if err != nil {
					b.Error(err)
					return
				}
				jobs[i] = job.ID
			}
		}()
	}
	for i := range b.N {
		next <- i
	}
	close(next)
	wg.Wait()
	// As `docsift bench scale` does, uploads do not wait for their jobs;
	// the benchmark ends when the last job has.
	for _, id := range jobs {
		if j, err := eng.WaitJob(context.Background(), id); err != nil || j.Status != store.StatusSucceeded {
			b.Fatalf("job %+v, %v; want SUCCEEDED", j, err)
		}
	}
}

// readPassages reads the texts of a BEIR corpus, or skips when absent.
func readPassages(tb testing.TB, path string) []string {
	tb.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		tb.Skipf("%s not found: the shared data is absent", path)
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var texts []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var d struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			tb.Fatal(err)
		}
		texts = append(texts, d.Text)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return texts
}
