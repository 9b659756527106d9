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

	"github.com/docsift/docsift/eval"
)

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

// Query sends cfg.Requests queries, cfg.Concurrency at a time, through
// the HTTP API and measures each end to end: what a client sees.
func Query(ctx context.Context, cfg LoadConfig) (*LoadResult, error) {
	if len(cfg.Queries) == 0 {
		return nil, fmt.Errorf("bench: no queries to send")
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
		RequestsPerSecond: float64(len(lat)) / secs, P50Ms: eval.Percentile(lat, 0.50), P99Ms: eval.Percentile(lat, 0.99),
		FirstTokenP50Ms: eval.Percentile(first, 0.50), FirstTokenP99Ms: eval.Percentile(first, 0.99),
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
