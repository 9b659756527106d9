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
	Embedder           string  `json:"embedder"`
}

// BenchIngest runs documents through the whole pipeline (store, job queue,
// extraction, chunking, embedding, index) in a throwaway data dir and
// reports the throughput, from the first upload to the last job's end. The
// store syncs to disk as a server's does, so the figure includes the cost of
// durability. The documents are a BEIR corpus file's (corpus) and/or files
// of any supported type (files).
func BenchIngest(corpus string, files []string, embedder llm.Embedder, workers int, progress io.Writer, log *slog.Logger) (*IngestResult, error) {
	if embedder == nil {
		embedder = llm.NewBuiltin()
	}
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if workers <= 0 {
		workers = runtime.NumCPU() // the engine's default, reported as such
	}
	var docs []Doc
	if corpus != "" {
		var err error
		if docs, err = ReadCorpus(corpus); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		docs = append(docs, Doc{ID: f, Title: filepath.Base(f), Data: data})
	}
	run, err := ingestCorpus(docs, embedder, workers, false, progress, log)
	if err != nil {
		return nil, err
	}
	defer run.Close()
	s := run.took.Seconds()
	return &IngestResult{
		Documents: len(docs), Chunks: run.chunks, Seconds: s,
		ChunksPerSecond: float64(run.chunks) / s, DocumentsPerSecond: float64(len(docs)) / s,
		Workers: workers, Embedder: embedder.Model(),
	}, nil
}

// LoadConfig describes a query load against a running server.
type LoadConfig struct {
	URL         string // base URL of the server
	APIKey      string
	OwnerID     string // a project id (prj_…) or a customer id (cus_…)
	Queries     []string
	Concurrency int
	Requests    int
	TopK        int
}

// LoadResult is what `docsift bench query` prints.
type LoadResult struct {
	Requests          int     `json:"requests"`
	Errors            int     `json:"errors"`
	Concurrency       int     `json:"concurrency"`
	Seconds           float64 `json:"seconds"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	P50Ms             float64 `json:"p50_ms"`
	P99Ms             float64 `json:"p99_ms"`
	FirstError        string  `json:"first_error,omitempty"`
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
	path, field := "/query/project", "project_id"
	if strings.HasPrefix(cfg.OwnerID, "cus_") {
		path, field = "/query/customer", "customer_id"
	}
	url := strings.TrimRight(cfg.URL, "/") + path
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Concurrency}}
	var (
		mu       sync.Mutex
		lat      []float64
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
				body, _ := json.Marshal(map[string]any{field: cfg.OwnerID, "query": cfg.Queries[i%len(cfg.Queries)], "top_k": max(cfg.TopK, 1)})
				t := time.Now()
				err := post(ctx, client, url, cfg.APIKey, body)
				ms := float64(time.Since(t).Microseconds()) / 1000
				mu.Lock()
				if err != nil {
					errs++
					if firstErr == "" {
						firstErr = err.Error()
					}
				} else {
					lat = append(lat, ms)
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
		FirstError: firstErr,
	}, nil
}

func post(ctx context.Context, client *http.Client, url, key string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}
