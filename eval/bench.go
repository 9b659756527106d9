package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/docsift/docsift/analysis"
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

// IngestConfig says what BenchIngest runs.
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

// BenchIngest runs documents through the whole pipeline (store, job queue,
// extraction, chunking, embedding, index) in a throwaway data dir and
// reports the throughput, from the first upload to the last job's end. The
// store syncs to disk as a server's does, so the figure includes the cost of
// durability. The documents are a BEIR corpus file's (corpus) and/or files
// of any supported type (files).
func BenchIngest(ctx context.Context, cfg IngestConfig) (*IngestResult, error) {
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
	var docs []Doc
	if cfg.Corpus != "" {
		var err error
		if docs, err = ReadCorpus(cfg.Corpus); err != nil {
			return nil, err
		}
	}
	for _, f := range cfg.Files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		docs = append(docs, Doc{ID: f, Title: filepath.Base(f), Data: data})
	}
	rounds := max(cfg.Rounds, 1)
	counted := newCountingEmbedder(cfg.Embedder)
	res := &IngestResult{Documents: len(docs), Workers: cfg.Workers, Uploaders: cfg.Uploaders, Embedder: cfg.Embedder.Model(), Rounds: rounds}
	var rec *Recording
	var raw RawResult
	var docsift, findable time.Duration
	var last *corpusRun
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
		run, err := ingestCorpus(docs, counted, cfg.Workers, cfg.Uploaders, false, cfg.Progress, cfg.Log)
		if err != nil {
			return nil, err
		}
		last = run
		docsift += run.took
		f, err := run.findable()
		if err != nil {
			return nil, err
		}
		findable += f
		res.Chunks = run.chunks
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
		took, chunks, err := last.uploadAgain(docs, cfg.Uploaders)
		if err != nil {
			return nil, err
		}
		calls, texts := counted.take()
		res.Again = &AgainResult{Seconds: took.Seconds(), ChunksPerSecond: float64(chunks) / took.Seconds(), EmbedCalls: calls, EmbedTexts: texts}
	}
	return res, nil
}

// findable returns how long after the first upload the last of the run's
// documents became searchable by its words, from the jobs' records.
func (r *corpusRun) findable() (time.Duration, error) {
	var first, last time.Time
	for id := range r.byDoc {
		d, err := r.store.Document(id)
		if err != nil {
			return 0, fmt.Errorf("eval: %w", err)
		}
		j, err := r.store.Job(d.JobID)
		if err != nil {
			return 0, fmt.Errorf("eval: %w", err)
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
func (r *corpusRun) uploadAgain(docs []Doc, uploads int) (time.Duration, int, error) {
	start := time.Now()
	jobs, err := r.submit(r.owner, docs, uploads)
	if err != nil {
		return 0, 0, err
	}
	chunks := 0
	for id := range jobs {
		j, err := r.engine.WaitJob(context.Background(), id)
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

// LoadConfig describes a query load against a running server.
type LoadConfig struct {
	URL     string // base URL of the server
	APIKey  string
	OwnerID string // a project id (prj_…) or a customer id (cus_…)
	Queries []string
	// Owners, when set, is the owner of each of Queries, in place of
	// OwnerID: query i goes to Owners[i%len(Owners)].
	Owners      []string
	Concurrency int
	Requests    int
	TopK        int
	// Stream asks for server-sent events ("stream": true) and times the
	// first piece of the answer as well as the whole.
	Stream bool
	// Timeout bounds each request, a streamed answer's last event
	// included; default DefaultQueryTimeout.
	Timeout time.Duration
}

// DefaultQueryTimeout is how long bench query waits for one answer: a
// chat model on a CPU writes a long answer in tens of seconds.
const DefaultQueryTimeout = 2 * time.Minute

// LoadResult is what `docsift bench query` prints.
type LoadResult struct {
	Requests          int     `json:"requests"`
	Errors            int     `json:"errors"`
	Concurrency       int     `json:"concurrency"`
	Seconds           float64 `json:"seconds"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	P50Ms             float64 `json:"p50_ms"`
	P99Ms             float64 `json:"p99_ms"`
	// With Stream: time to the first "answer" event (the first token a
	// user sees) and to the "done" event (the whole answer; P50Ms and
	// P99Ms are then the same).
	FirstTokenP50Ms float64 `json:"first_token_p50_ms,omitempty"`
	FirstTokenP99Ms float64 `json:"first_token_p99_ms,omitempty"`
	FirstError      string  `json:"first_error,omitempty"`
}

// BenchQuery sends cfg.Requests queries, cfg.Concurrency at a time, through
// the HTTP API and measures each end to end: what a client sees.
func BenchQuery(ctx context.Context, cfg LoadConfig) (*LoadResult, error) {
	if len(cfg.Queries) == 0 {
		return nil, fmt.Errorf("eval: no queries to send")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	owners := cfg.Owners
	if len(owners) == 0 {
		owners = []string{cfg.OwnerID}
	}
	base := strings.TrimRight(cfg.URL, "/")
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultQueryTimeout
	}
	client := &http.Client{Timeout: cfg.Timeout, Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency}}
	var (
		mu       sync.Mutex
		lat      []float64
		first    []float64
		errs     int
		firstErr string
		wg       sync.WaitGroup
	)
	next := make(chan int)
	start := time.Now()
	for range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				owner := owners[i%len(owners)]
				path, field := queryRoute(owner)
				url := base + path
				body, _ := json.Marshal(map[string]any{field: owner, "query": cfg.Queries[i%len(cfg.Queries)], "top_k": max(cfg.TopK, 1), "stream": cfg.Stream})
				t := time.Now()
				var firstToken time.Duration
				var err error
				if cfg.Stream {
					firstToken, err = postStream(ctx, client, url, cfg.APIKey, body)
				} else {
					err = post(ctx, client, url, cfg.APIKey, body)
				}
				ms := float64(time.Since(t).Microseconds()) / 1000
				mu.Lock()
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
				} else {
					lat = append(lat, ms)
					if cfg.Stream {
						first = append(first, float64(firstToken.Microseconds())/1000)
					}
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < cfg.Requests && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	secs := time.Since(start).Seconds()
	return &LoadResult{
		Requests: cfg.Requests, Errors: errs, Concurrency: cfg.Concurrency, Seconds: secs,
		RequestsPerSecond: float64(len(lat)) / secs, P50Ms: percentile(lat, 0.50), P99Ms: percentile(lat, 0.99),
		FirstTokenP50Ms: percentile(first, 0.50), FirstTokenP99Ms: percentile(first, 0.99),
		FirstError: firstErr,
	}, nil
}

// queryRoute is the path of an owner's queries and the field that names
// it: a project's (prj_…) or a customer's (cus_…).
func queryRoute(owner string) (path, field string) {
	if strings.HasPrefix(owner, "cus_") {
		return "/query/customer", "customer_id"
	}
	return "/query/project", "project_id"
}

func post(ctx context.Context, client *http.Client, url, key string, body []byte) error {
	_, err := send(ctx, client, http.MethodPost, url, key, body)
	return err
}

// send makes a JSON request (with key as the bearer token unless empty)
// and returns the whole answer of a 200, or an error carrying the status
// and the answer's text.
func send(ctx context.Context, client *http.Client, method, url, key string, body []byte) ([]byte, error) {
	return sendAs(ctx, client, method, url, key, "application/json", body)
}

// sendAs is send with a body of contentType ("": none).
func sendAs(ctx context.Context, client *http.Client, method, url, key, contentType string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	msg, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	return msg, nil
}
