package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/internal/progress"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/search"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// DefaultTopK is the cut-off of the reported metrics.
const DefaultTopK = 10

// Config says what to evaluate.
type Config struct {
	Corpus, Queries, Qrels string
	TopK                   int
	Embedder               llm.Embedder // nil: the built-in embedder
	Workers                int
	Progress               io.Writer // where progress bars go; nil for none
	Log                    *slog.Logger
}

// Result is what docsift eval prints.
type Result struct {
	NDCG          float64 `json:"ndcg_at_10"`
	Recall        float64 `json:"recall_at_10"`
	MRR           float64 `json:"mrr_at_10"`
	QueryP50Ms    float64 `json:"query_p50_ms"`
	QueryP95Ms    float64 `json:"query_p95_ms"`
	IngestSeconds float64 `json:"ingest_seconds"`
	Queries       int     `json:"queries"`
	Documents     int     `json:"documents"`
	Chunks        int     `json:"chunks"`
	Embedder      string  `json:"embedder"`
}

// Corpus is a corpus ingested into a throwaway data dir through the same
// pipeline as uploads: what eval scores, and what bench times.
type Corpus struct {
	Dir    string
	Store  *bolt.Store
	Engine *ingest.Engine
	Owner  string            // the project that owns every document
	ByDoc  map[string]string // docsift document id → corpus id
	Chunks int
	Took   time.Duration // from the first upload to the last job's end
}

// Close stops the engine and store and removes the data dir.
func (r *Corpus) Close() {
	if r.Engine != nil {
		r.Engine.Shutdown(context.Background())
	}
	if r.Store != nil {
		r.Store.Close()
	}
	os.RemoveAll(r.Dir)
}

// IngestCorpus uploads every document (title as the name, text as the
// content) and waits until every job has ended. As BEIR's own BM25 runs
// do, the title is searched beside the text as a field of its own: the
// index scores a document's name as a title field (BM25F, index/fields.go),
// and embedders read it before the text.
//
// A throwaway run skips fsync: its data dir is deleted at the end, so
// durability buys nothing and would only measure the disk. uploads is how
// many documents are submitted at once (as clients of the API do); with
// one they are submitted in the corpus's order, so that every run numbers
// them alike.
func IngestCorpus(docs []Doc, embedder llm.Embedder, workers, uploads int, throwaway bool, bars io.Writer, log *slog.Logger) (*Corpus, error) {
	dir, err := os.MkdirTemp("", "docsift-eval-*")
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	r := &Corpus{Dir: dir, ByDoc: make(map[string]string, len(docs))}
	if r.Store, err = bolt.Open(dir); err != nil {
		r.Close()
		return nil, err
	}
	if throwaway {
		r.Store.SetThrowaway()
	}
	p, _, err := r.Store.CreateProject("eval")
	if err != nil {
		r.Close()
		return nil, err
	}
	r.Owner = p.ID
	r.Engine = ingest.New(r.Store, embedder, filepath.Join(dir, "index"), ingest.Config{Workers: workers}, log)
	if err := r.Engine.Start(); err != nil {
		r.Close()
		return nil, err
	}
	start := time.Now()
	jobs, err := r.Submit(p.ID, docs, uploads)
	if err != nil {
		r.Close()
		return nil, err
	}
	bar := progress.New(bars, "ingesting", len(docs))
	failed, finished := 0, 0
	for id := range jobs {
		j, err := r.Engine.WaitJob(context.Background(), id)
		if err != nil {
			r.Close()
			return nil, err
		}
		if j.Status == store.StatusFailed {
			failed++
			log.Warn("document failed to index", "document", j.DocumentID, "err", j.Error)
		}
		r.Chunks += j.Chunks
		finished++
		bar.Set(finished)
	}
	bar.Done()
	r.Took = time.Since(start)
	if failed == len(docs) && failed > 0 {
		r.Close()
		return nil, errors.New("eval: no document could be indexed")
	}
	return r, nil
}

// Submit submits docs to the owner, uploads at a time, and returns their
// jobs' ids.
func (r *Corpus) Submit(owner string, docs []Doc, uploads int) (map[string]bool, error) {
	var (
		mu    sync.Mutex
		jobs  = make(map[string]bool, len(docs))
		first error
		wg    sync.WaitGroup
		next  = make(chan Doc)
	)
	for range max(uploads, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range next {
				data := d.Data
				if data == nil {
					data = []byte(d.Text)
				}
				job, doc, err := r.Engine.Submit(ingest.Upload{ProjectID: owner, OwnerID: owner, Name: d.Title, Data: data, Metadata: d.Metadata})
				mu.Lock()
				if err != nil && first == nil {
					first = fmt.Errorf("eval: document %s: %w", d.ID, err)
				} else if err == nil {
					r.ByDoc[doc.ID] = d.ID
					jobs[job.ID] = true
				}
				mu.Unlock()
			}
		}()
	}
	for _, d := range docs {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			break
		}
		next <- d
	}
	close(next)
	wg.Wait()
	return jobs, first
}

// Run ingests the corpus, runs every judged query through the same search
// as /query/*, and scores the rankings. A document's rank is that of its
// best chunk.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.TopK <= 0 {
		cfg.TopK = DefaultTopK
	}
	if cfg.Embedder == nil {
		cfg.Embedder = llm.NewBuiltin()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	docs, err := ReadCorpus(cfg.Corpus)
	if err != nil {
		return nil, err
	}
	queries, err := ReadQueries(cfg.Queries)
	if err != nil {
		return nil, err
	}
	qrels, err := ReadQrels(cfg.Qrels)
	if err != nil {
		return nil, err
	}
	run, err := IngestCorpus(docs, cfg.Embedder, cfg.Workers, 1, true, cfg.Progress, cfg.Log)
	if err != nil {
		return nil, err
	}
	defer run.Close()

	res := &Result{Documents: len(docs), Chunks: run.Chunks, IngestSeconds: run.Took.Seconds(), Embedder: cfg.Embedder.Model()}
	searcher := search.New(run.Engine, run.Store, llm.NewExtractive(), nil, cfg.Log)
	var lat []float64
	bar := progress.New(cfg.Progress, "querying ", len(queries))
	for i, q := range queries {
		bar.Set(i)
		rels, ok := qrels[q.ID]
		if !ok {
			continue
		}
		start := time.Now()
		// Ask for more chunks than documents: several chunks of one
		// document count once.
		results, _, err := searcher.Search(ctx, run.Owner, q.Text, min(3*cfg.TopK, 50))
		if err != nil {
			return nil, fmt.Errorf("eval: query %s: %w", q.ID, err)
		}
		lat = append(lat, float64(time.Since(start).Microseconds())/1000)
		var ranked []string
		seen := map[string]bool{}
		for _, r := range results {
			id := run.ByDoc[r.Chunk.DocumentID]
			if !seen[id] {
				seen[id] = true
				ranked = append(ranked, id)
			}
		}
		s, ok := Score(ranked, rels, cfg.TopK)
		if !ok {
			continue
		}
		res.NDCG += s.NDCG
		res.Recall += s.Recall
		res.MRR += s.MRR
		res.Queries++
	}
	bar.Done()
	if res.Queries == 0 {
		return nil, errors.New("eval: no query has a relevant judgment in the qrels")
	}
	n := float64(res.Queries)
	res.NDCG, res.Recall, res.MRR = res.NDCG/n, res.Recall/n, res.MRR/n
	res.QueryP50Ms, res.QueryP95Ms = Percentile(lat, 0.50), Percentile(lat, 0.95)
	return res, nil
}

// Percentile returns the p-th percentile of xs by nearest rank.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	i := int(p * float64(len(s)))
	return s[min(i, len(s)-1)]
}
