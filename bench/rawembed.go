package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// EmbedRecorder is an HTTP transport for docsift's Ollama client that keeps
// a copy of every /api/embed request that succeeded, so that the same
// requests (the same texts, task prefixes and batches, byte for byte) can
// be sent again straight to Ollama. Replaying them measures what the model
// server alone can do with docsift's work; the difference with docsift's
// own throughput is what the pipeline around it costs.
type EmbedRecorder struct {
	Base http.RoundTripper // nil: http.DefaultTransport

	mu       sync.Mutex
	bodies   [][]byte
	texts    int
	inFlight int // embed requests under way now
	peak     int // the most that were ever under way at once
}

// Client returns an HTTP client that records through r.
func (r *EmbedRecorder) Client() *http.Client { return &http.Client{Transport: r} }

// RoundTrip forwards req and records its body when it is a successful
// /api/embed call.
func (r *EmbedRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	base := r.Base
	if base == nil {
		base = http.DefaultTransport
	}
	if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/api/embed") || req.Body == nil {
		return base.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("bench: record embed request: %w", err)
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.mu.Lock()
	r.inFlight++
	r.peak = max(r.peak, r.inFlight)
	r.mu.Unlock()
	resp, err := base.RoundTrip(req)
	r.mu.Lock()
	r.inFlight--
	r.mu.Unlock()
	if err == nil && resp.StatusCode == http.StatusOK {
		n, err := embedInputs(body)
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.bodies = append(r.bodies, body)
		r.texts += n
		r.mu.Unlock()
	}
	return resp, err
}

// Take returns what was recorded since the last Take and starts afresh;
// the start-up probe, taken before a run, is not part of it.
func (r *EmbedRecorder) Take() *Recording {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec := &Recording{bodies: r.bodies, texts: r.texts, peak: r.peak}
	r.bodies, r.texts, r.peak = nil, 0, r.inFlight
	return rec
}

// Recording is the /api/embed requests of one run.
type Recording struct {
	bodies [][]byte
	texts  int
	peak   int // the most requests under way at once
}

// Requests returns the number of requests and texts recorded.
func (r *Recording) Requests() (requests, texts int) { return len(r.bodies), r.texts }

// RawResult is Ollama's own throughput on docsift's recorded requests.
type RawResult struct {
	Requests       int     `json:"requests"`
	Concurrency    int     `json:"concurrency"`
	Texts          int     `json:"texts"`
	Seconds        float64 `json:"seconds"`
	TextsPerSecond float64 `json:"texts_per_second"`
}

// Replay sends every recorded request again to the Ollama at baseURL, in
// the order docsift sent them and with as many under way at once as docsift
// ever had (one per indexing worker at most), and times the whole: the same
// work at the same concurrency, without docsift. Ollama embeds a request's
// inputs concurrently, up to its OLLAMA_NUM_PARALLEL slots, so the batch is
// what fills the server; concurrent requests add what lies between the
// model's runs (parsing, tokenising, scheduling, the HTTP round trip).
func (r *Recording) Replay(ctx context.Context, baseURL string) (*RawResult, error) {
	bodies, texts, conc := r.bodies, r.texts, max(r.peak, 1)
	if len(bodies) == 0 {
		return nil, fmt.Errorf("bench: no embed request was recorded to replay")
	}
	url := strings.TrimRight(baseURL, "/") + "/api/embed"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	next := make(chan int)
	errc := make(chan error, conc)
	var wg sync.WaitGroup
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := postEmbed(ctx, client, url, bodies[i]); err != nil {
					errc <- fmt.Errorf("bench: raw embed request %d of %d: %w", i+1, len(bodies), err)
					return
				}
			}
		}()
	}
	var err error
feed:
	for i := range bodies {
		select {
		case next <- i:
		case err = <-errc:
			break feed
		}
	}
	close(next)
	wg.Wait()
	secs := time.Since(start).Seconds()
	if err == nil && len(errc) > 0 {
		err = <-errc
	}
	if err != nil {
		return nil, err
	}
	return &RawResult{Requests: len(bodies), Concurrency: conc, Texts: texts, Seconds: secs, TextsPerSecond: float64(texts) / secs}, nil
}

func postEmbed(ctx context.Context, client *http.Client, url string, body []byte) error {
	_, err := send(ctx, client, http.MethodPost, url, "", body) // the whole answer: the vectors are part of the work
	return err
}

// embedInputs counts the texts of an /api/embed request body, whose input
// is a string or a list of strings.
func embedInputs(body []byte) (int, error) {
	var req struct {
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return 0, fmt.Errorf("bench: read embed request: %w", err)
	}
	var list []string
	if err := json.Unmarshal(req.Input, &list); err == nil {
		return len(list), nil
	}
	return 1, nil
}
