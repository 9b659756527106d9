package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/docsift/docsift/analysis"
	"github.com/docsift/docsift/eval"
	"github.com/docsift/docsift/llm"
)

// IngestResult is what `docsift bench ingest` prints.
type IngestResult struct {
	Documents          int     `json:"documents"`
	Chunks             int     `json:"chunks"`
	Seconds            float64 `json:"seconds"`
	ChunksPerSecond    float64 `json:"chunks_per_second"`
	DocumentsPerSecond float64 `json:"documents_per_second"`
	Workers            int     `json:"workers"`
	Uploaders          int     `json:"uploaders"`
	Embedder           string  `json:"embedder"`
	Rounds             int     `json:"rounds"` // the figures are per round, averaged
	// FindableSeconds is the time from the first upload until every
	// document's chunks could be found by their words (searchable before
	// their vectors); Seconds is until every job SUCCEEDED, every chunk
	// with its vector.
	FindableSeconds float64 `json:"findable_seconds"`
	// EmbedCalls and EmbedTexts are the engine's calls of the embedder and
	// the texts in them (fewer than chunks when texts repeat: the
	// embedding cache). EmbedRequests is Ollama's share: /api/embed
	// requests, each of at most the embedder's batch size; their number
	// may differ between rounds, as batches are sized by time.
	EmbedCalls    int `json:"embed_calls"`
	EmbedTexts    int `json:"embed_texts"`
	EmbedRequests int `json:"embed_requests,omitempty"`
	// Raw is Ollama alone on the same requests, sent straight to it in the
	// same run; RawRatio is docsift's throughput over Raw's on the same
	// texts (Raw's seconds over docsift's): what is left of the model
	// server's speed once extraction, chunking, the store and the index
	// have had their share.
	Raw      *RawResult `json:"raw,omitempty"`
	RawRatio float64    `json:"docsift_raw_ratio,omitempty"`
	// Again is every document uploaded a second time after the first pass,
	// when asked: what the embedding cache saves.
	Again *AgainResult `json:"again,omitempty"`
}

// AgainResult is the second upload of the same documents.
type AgainResult struct {
	Seconds         float64 `json:"seconds"`
	ChunksPerSecond float64 `json:"chunks_per_second"`
	EmbedCalls      int     `json:"embed_calls"`
	EmbedTexts      int     `json:"embed_texts"`
}

// IngestConfig says what Ingest runs.
type IngestConfig struct {
	Corpus   string       // a BEIR corpus.jsonl, or ""
	Files    []string     // files of any supported type
	Embedder llm.Embedder // nil: the built-in embedder
	Workers  int          // indexing workers; default: number of CPUs
	// Uploaders is how many documents are submitted at once, as clients
	// of the API do: one alone waits for its commit, so one at a time
	// measures the disk's fsync, not the pipeline. Default
	// ScaleDefaultUploaders.
	Uploaders int

	// Recorder, when set, is the HTTP transport of Embedder's Ollama
	// client; the /api/embed requests it records during the run are then
	// replayed straight to OllamaURL for the raw figure.
	Recorder  *EmbedRecorder
	OllamaURL string

	// Rounds repeats the run, each time in a fresh data dir, and with
	// Recorder alternates which of docsift and raw Ollama goes first
	// (docsift, raw, raw, docsift, …), so that a machine whose load drifts
	// slows both alike; the figures are averages over the rounds. Default
	// 1.
	Rounds int

	// Again uploads every document a second time once the first pass has
	// ended.
	Again bool

	Progress io.Writer // progress bars; nil for none
	Log      *slog.Logger
}

// Ingest runs documents through the whole pipeline (store, job queue,
// extraction, chunking, embedding, index) in a throwaway data dir and
// reports the throughput, from the first upload to the last job's end. The
// store syncs to disk as a server's does, so the figure includes the cost of
// durability. The documents are a BEIR corpus file's (corpus) and/or files
// of any supported type (files).
func Ingest(ctx context.Context, cfg IngestConfig) (*IngestResult, error) {
	if cfg.Embedder == nil {
		cfg.Embedder = llm.NewBuiltin()
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.NumCPU() // the engine's default, reported as such
	}
	if cfg.Uploaders <= 0 {
		cfg.Uploaders = ScaleDefaultUploaders
	}
	var docs []eval.Doc
	if cfg.Corpus != "" {
		var err error
		if docs, err = eval.ReadCorpus(cfg.Corpus); err != nil {
			return nil, err
		}
	}
	for _, f := range cfg.Files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		docs = append(docs, eval.Doc{ID: f, Title: filepath.Base(f), Data: data})
	}
	rounds := max(cfg.Rounds, 1)
	counted := newCountingEmbedder(cfg.Embedder)
	res := &IngestResult{Documents: len(docs), Workers: cfg.Workers, Uploaders: cfg.Uploaders, Embedder: cfg.Embedder.Model(), Rounds: rounds}
	var rec *Recording
	var raw RawResult
	var docsift, findable time.Duration
	var last *eval.Corpus
	defer func() {
		if last != nil {
			last.Close()
		}
	}()
	for round := range rounds {
		rawFirst := rec != nil && rec.texts > 0 && round%2 == 1
		if rawFirst {
			if err := replayInto(ctx, &raw, rec, cfg.OllamaURL); err != nil {
				return nil, err
			}
		}
		if cfg.Recorder != nil {
			cfg.Recorder.Take() // the start-up probe and earlier rounds are not this run's
		}
		if last != nil {
			last.Close()
		}
		run, err := eval.IngestCorpus(docs, counted, cfg.Workers, cfg.Uploaders, false, cfg.Progress, cfg.Log)
		if err != nil {
			return nil, err
		}
		last = run
		docsift += run.Took
		f, err := findableAfter(run)
		if err != nil {
			return nil, err
		}
		findable += f
		res.Chunks = run.Chunks
		res.EmbedCalls, res.EmbedTexts = counted.take()
		if cfg.Recorder != nil {
			rec = cfg.Recorder.Take()
			requests, _ := rec.Requests()
			res.EmbedRequests += requests
			if !rawFirst && requests > 0 {
				if err := replayInto(ctx, &raw, rec, cfg.OllamaURL); err != nil {
					return nil, err
				}
			}
		}
	}
	s := docsift.Seconds() / float64(rounds)
	res.EmbedRequests /= rounds
	res.Seconds, res.ChunksPerSecond, res.DocumentsPerSecond = s, float64(res.Chunks)/s, float64(len(docs))/s
	res.FindableSeconds = findable.Seconds() / float64(rounds)
	if raw.Requests > 0 {
		raw.Requests, raw.Texts, raw.Seconds = raw.Requests/rounds, raw.Texts/rounds, raw.Seconds/float64(rounds)
		raw.TextsPerSecond = float64(raw.Texts) / raw.Seconds
		res.Raw, res.RawRatio = &raw, raw.Seconds/s
	}
	if cfg.Again {
		took, chunks, err := uploadAgain(last, docs, cfg.Uploaders)
		if err != nil {
			return nil, err
		}
		calls, texts := counted.take()
		res.Again = &AgainResult{Seconds: took.Seconds(), ChunksPerSecond: float64(chunks) / took.Seconds(), EmbedCalls: calls, EmbedTexts: texts}
	}
	return res, nil
}

// findableAfter returns how long after the first upload the last of the run's
// documents became searchable by its words, from the jobs' records.
func findableAfter(r *eval.Corpus) (time.Duration, error) {
	var first, last time.Time
	for id := range r.ByDoc {
		d, err := r.Store.Document(id)
		if err != nil {
			return 0, fmt.Errorf("bench: %w", err)
		}
		j, err := r.Store.Job(d.JobID)
		if err != nil {
			return 0, fmt.Errorf("bench: %w", err)
		}
		if first.IsZero() || j.CreatedAt.Before(first) {
			first = j.CreatedAt
		}
		if j.SearchableAt.After(last) {
			last = j.SearchableAt
		}
	}
	if last.Before(first) {
		return 0, nil
	}
	return last.Sub(first), nil
}

// replayInto replays rec and adds its figures to sum.
func replayInto(ctx context.Context, sum *RawResult, rec *Recording, url string) error {
	r, err := rec.Replay(ctx, url)
	if err != nil {
		return err
	}
	sum.Requests += r.Requests
	sum.Texts += r.Texts
	sum.Seconds += r.Seconds
	sum.Concurrency = r.Concurrency
	return nil
}

// uploadAgain uploads docs once more into the run's owner, uploads at a
// time, and waits for their jobs, returning the time it took and the
// chunks indexed.
func uploadAgain(r *eval.Corpus, docs []eval.Doc, uploads int) (time.Duration, int, error) {
	start := time.Now()
	jobs, err := r.Submit(r.Owner, docs, uploads)
	if err != nil {
		return 0, 0, err
	}
	chunks := 0
	for id := range jobs {
		j, err := r.Engine.WaitJob(context.Background(), id)
		if err != nil {
			return 0, 0, err
		}
		chunks += j.Chunks
	}
	return time.Since(start), chunks, nil
}

// countingEmbedder counts an embedder's calls and texts.
type countingEmbedder struct {
	llm.Embedder
	mu           sync.Mutex
	calls, texts int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.count(len(texts))
	return c.Embedder.Embed(ctx, texts)
}

// count counts a call of n texts.
func (c *countingEmbedder) count(n int) {
	c.mu.Lock()
	c.calls++
	c.texts += n
	c.mu.Unlock()
}

// InProcess lets the pipeline treat a counted built-in embedder as the
// built-in one, as a server's is (see llm.InProcess).
func (c *countingEmbedder) InProcess() bool { return llm.InProcess(c.Embedder) }

// countingAfterEmbedder is a countingEmbedder of an embedder with
// EmbedAnalyzed, which it counts and passes on: without it, the pipeline
// would take the path a server's built-in embedder does not.
type countingAfterEmbedder struct {
	*countingEmbedder
	after llm.AnalyzingEmbedder
}

func (c countingAfterEmbedder) EmbedAnalyzed(ctx context.Context, head string, texts []string) ([][]float32, []analysis.Analyzed, error) {
	c.count(len(texts))
	return c.after.EmbedAnalyzed(ctx, head, texts)
}

// newCountingEmbedder counts e's calls and texts, with EmbedAnalyzed when e
// has it.
func newCountingEmbedder(e llm.Embedder) interface {
	llm.Embedder
	take() (calls, texts int)
} {
	c := &countingEmbedder{Embedder: e}
	if a, ok := e.(llm.AnalyzingEmbedder); ok {
		return countingAfterEmbedder{c, a}
	}
	return c
}

// take returns the calls and texts since the last take.
func (c *countingEmbedder) take() (calls, texts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	calls, texts, c.calls, c.texts = c.calls, c.texts, 0, 0
	return calls, texts
}
