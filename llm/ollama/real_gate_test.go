package ollama

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// countingTransport counts the /api/embed requests it carries and the most
// that were in flight at once.
type countingTransport struct {
	next     http.RoundTripper
	inFlight atomic.Int32
	peak     atomic.Int32
	requests atomic.Int32
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.URL.Path, "/api/embed") {
		return c.next.RoundTrip(r)
	}
	c.requests.Add(1)
	n := c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	return c.next.RoundTrip(r) // the body is read by then: tinyembed's answers are small
}

// TestRealOllamaIngestGateAndQueryCache: against the real server, two
// ingest workers embedding at once never have more than one request in
// flight to it, and a query asked again is answered from the cache.
func TestRealOllamaIngestGateAndQueryCache(t *testing.T) {
	_, cfg := newRealOllama(t)
	ct := &countingTransport{next: cfg.HTTPClient.Transport}
	cfg.HTTPClient = &http.Client{Transport: ct}
	ctx := realCtx(t)
	e := mustEmbedder(t, cfg)
	if err := e.Check(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			texts := make([]string, 12)
			for i := range texts {
				texts[i] = fmt.Sprintf("worker %d passage %d: the river floods the valley every spring", w, i)
			}
			_, err := e.Embed(ctx, texts)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if p := ct.peak.Load(); p != 1 {
		t.Errorf("%d ingest requests in flight at once to one server, want 1", p)
	}

	before := ct.requests.Load()
	first, err := e.EmbedQuery(ctx, "when does the river flood")
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.EmbedQuery(ctx, "when does the river flood")
	if err != nil {
		t.Fatal(err)
	}
	if n := ct.requests.Load() - before; n != 1 {
		t.Errorf("a query asked twice sent %d requests, want 1 (the second from the cache)", n)
	}
	if cosine(first, again) < 0.9999 {
		t.Error("the cached query vector differs from the server's")
	}
}
