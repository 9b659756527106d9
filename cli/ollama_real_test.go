package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docsift/docsift/internal/ollamareal"
	"github.com/docsift/docsift/llm"
	"github.com/docsift/docsift/llm/ollama"
	"github.com/docsift/docsift/store"
)

// These tests run `docsift serve` and `docsift models` against the real
// Ollama server (internal/ollamareal) with its generated models: tinyembed
// for embeddings, tinychat for answers. `make test-ollama` runs them.

// realPDF is a 36-page PDF of the shared test data, read in place.
const realPDF = "../../shared/data/pdf/libtasn1.pdf"

// realWait bounds every wait on the server or a job: a shared machine under
// load embeds and answers slowly, but never this slowly.
const realWait = 5 * time.Minute

// realServeFlags points serve at Ollama with the generated models.
func realServeFlags(ollamaURL string) []string {
	return []string{"--embedder", "ollama", "--answerer", "ollama", "--ollama-url", ollamaURL,
		"--embed-model", ollamareal.TinyEmbed.Name, "--chat-model", ollamareal.TinyChat.Name,
		"--ollama-timeout", realWait.String()}
}

// apiCall sends a JSON request with key and decodes the JSON answer.
func apiCall(t *testing.T, method, url, key string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %v", method, url, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// uploadPDF uploads the file at path for owner and returns the job and
// document ids.
func uploadPDF(t *testing.T, base, key, owner, path string) (jobID, docID string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", filepath.Base(path))
	fw.Write(data)
	mw.WriteField("data", fmt.Sprintf(`{"owner_id": %q}`, owner))
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, base+"/upload/file", &body)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		JobID      string `json:"job_id"`
		DocumentID string `json:"document_id"`
		Error      string `json:"error"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload %s: %d %s", path, resp.StatusCode, out.Error)
	}
	return out.JobID, out.DocumentID
}

// jobState is what GET /jobs/{id} says.
type jobState struct {
	Status string  `json:"status"`
	Error  string  `json:"error"`
	Chunks float64 `json:"chunks"`
}

// waitJobState asks for a job until until holds. The server offers no
// push for job status but webhooks, so this polls, at a pace that costs it
// nothing; the condition, never the time, ends the wait.
func waitJobState(t *testing.T, base, key, jobID string, until func(jobState) bool) jobState {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(realWait)
	for {
		status, out := apiCall(t, http.MethodGet, base+"/jobs/"+jobID, key, nil)
		if status != http.StatusOK {
			t.Fatalf("GET /jobs/%s: %d %v", jobID, status, out)
		}
		j := jobState{Status: fmt.Sprint(out["status"]), Chunks: asFloat(out["chunks"])}
		if e, ok := out["error"].(string); ok {
			j.Error = e
		}
		if until(j) {
			return j
		}
		select {
		case <-deadline:
			t.Fatalf("job %s: gave up waiting; last seen %+v", jobID, j)
		case <-tick.C:
		}
	}
}

func asFloat(v any) float64 {
	f, _ := v.(float64)
	return f
}

func ended(j jobState) bool {
	return j.Status == store.StatusSucceeded || j.Status == store.StatusFailed
}

// sseEvent is one server-sent event.
type sseEvent struct {
	Name string
	Data json.RawMessage
}

// readEvents reads a text/event-stream to its end.
func readEvents(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var events []sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			events = append(events, sseEvent{Name: name, Data: json.RawMessage(strings.TrimPrefix(line, "data: "))})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading events: %v", err)
	}
	return events
}

type streamedChunk struct {
	DocumentID   string `json:"document_id"`
	DocumentName string `json:"document_name"`
	Page         *int   `json:"page"`
	Text         string `json:"text"`
}

// TestRealOllamaServePDFAndStreamedQuery indexes a real PDF through `docsift
// serve` with tinyembed and asks a streamed question answered by tinychat:
// the events come in order, the chunks are the PDF's pages, and the answer
// names its model.
func TestRealOllamaServePDFAndStreamedQuery(t *testing.T) {
	if _, err := os.Stat(realPDF); err != nil {
		t.Skipf("the shared PDFs are not here (%v); this test reads %s", err, realPDF)
	}
	srv := ollamareal.Start(t)
	dir := t.TempDir()
	p := createProject(t, dir, "real")
	s := startServe(t, dir, freeAddr(t), realServeFlags(srv.URL)...)

	jobID, docID := uploadPDF(t, s.base, p.APIKey, p.ProjectID, realPDF)
	j := waitJobState(t, s.base, p.APIKey, jobID, ended)
	if j.Status != store.StatusSucceeded || j.Chunks < 20 {
		t.Fatalf("job %+v; want SUCCEEDED with the PDF's chunks", j)
	}
	_, doc := apiCall(t, http.MethodGet, s.base+"/documents/"+docID, p.APIKey, nil)
	if asFloat(doc["pages"]) != 36 {
		t.Errorf("document %v: want 36 pages", doc)
	}

	body, _ := json.Marshal(map[string]any{"project_id": p.ProjectID, "query": "How does libtasn1 decode a DER encoded structure?", "top_k": 5, "stream": true})
	req, _ := http.NewRequest(http.MethodPost, s.base+"/query/project", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+p.APIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/event-stream") {
		msg, _ := io.ReadAll(resp.Body)
		t.Fatalf("streamed query: %d %s: %s", resp.StatusCode, ct, msg)
	}
	events := readEvents(t, resp.Body)
	if len(events) < 3 || events[0].Name != "chunks" || events[len(events)-1].Name != "done" {
		t.Fatalf("events %v; want chunks, answer…, done", eventNames(events))
	}
	var first struct {
		Chunks   []streamedChunk `json:"chunks"`
		Warnings []string        `json:"warnings"`
	}
	if err := json.Unmarshal(events[0].Data, &first); err != nil {
		t.Fatal(err)
	}
	if len(first.Chunks) != 5 || len(first.Warnings) != 0 {
		t.Fatalf("chunks event: %d chunks, warnings %q; want 5 and none (vector search on)", len(first.Chunks), first.Warnings)
	}
	for _, c := range first.Chunks {
		if c.DocumentID != docID || c.DocumentName != "libtasn1.pdf" || c.Page == nil || *c.Page < 1 || *c.Page > 36 || c.Text == "" {
			t.Errorf("chunk %+v is not a page of the PDF", c)
		}
	}
	var deltas strings.Builder
	for _, e := range events[1 : len(events)-1] {
		var d struct{ Delta string }
		if e.Name != "answer" || json.Unmarshal(e.Data, &d) != nil {
			t.Fatalf("event %s %s between chunks and done", e.Name, e.Data)
		}
		deltas.WriteString(d.Delta)
	}
	var done struct {
		Answer      string          `json:"answer"`
		AnswerModel string          `json:"answer_model"`
		Chunks      []streamedChunk `json:"chunks"`
		Warnings    []string        `json:"warnings"`
	}
	if err := json.Unmarshal(events[len(events)-1].Data, &done); err != nil {
		t.Fatal(err)
	}
	// tinychat never stops before num_predict: its answer is reported truncated.
	if done.AnswerModel != "ollama:"+ollamareal.TinyChat.Name || len(done.Warnings) != 1 || !strings.Contains(done.Warnings[0], "truncated at its limit") {
		t.Errorf("done: answer_model %q, warnings %q; want ollama:%s and the truncated answer's warning", done.AnswerModel, done.Warnings, ollamareal.TinyChat.Name)
	}
	if done.Answer == "" || done.Answer != strings.TrimSpace(deltas.String()) && done.Answer != deltas.String() {
		t.Errorf("done's answer (%d bytes) is not the answer events' (%d bytes)", len(done.Answer), deltas.Len())
	}
	if len(done.Chunks) != len(first.Chunks) {
		t.Errorf("done has %d chunks, the chunks event %d", len(done.Chunks), len(first.Chunks))
	}
}

func eventNames(events []sseEvent) []string {
	var names []string
	for _, e := range events {
		names = append(names, e.Name)
	}
	return names
}

// gatedProxy stands between docsift and Ollama. Armed, it holds the next
// /api/embed request until released, so that a test can stop the Ollama
// process while docsift waits on it: the outage starts mid-ingest at a
// known point, not at a guessed time. A request it cannot forward (the
// server is gone) has its connection cut, as a dying server's would.
type gatedProxy struct {
	*httptest.Server
	target  atomic.Pointer[url.URL]
	mu      sync.Mutex
	held    chan struct{} // armed: closed when a request is held
	release chan struct{}
}

func newGatedProxy(t *testing.T, target string) *gatedProxy {
	g := &gatedProxy{}
	g.retarget(t, target)
	rp := &httputil.ReverseProxy{
		Rewrite:      func(r *httputil.ProxyRequest) { r.SetURL(g.target.Load()) },
		ErrorHandler: func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) },
	}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/embed" {
			g.mu.Lock()
			held, release := g.held, g.release
			g.held = nil
			g.mu.Unlock()
			if held != nil {
				close(held)
				select {
				case <-release:
				case <-r.Context().Done():
					return
				}
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(g.Close)
	return g
}

func (g *gatedProxy) retarget(t *testing.T, target string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g.target.Store(u)
}

// arm makes the proxy hold the next embed request; held is closed when it
// does, and closing release lets the request go on.
func (g *gatedProxy) arm() (held, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held, g.release = make(chan struct{}), make(chan struct{})
	return g.held, g.release
}

// TestRealOllamaServeOllamaStopsMidIngest stops the Ollama process while
// `docsift serve` is embedding a PDF: the job goes back to the queue with
// the reason, a text uploaded during the outage waits too, and both
// complete once Ollama runs again.
func TestRealOllamaServeOllamaStopsMidIngest(t *testing.T) {
	if _, err := os.Stat(realPDF); err != nil {
		t.Skipf("the shared PDFs are not here (%v); this test reads %s", err, realPDF)
	}
	first := ollamareal.Start(t)
	proxy := newGatedProxy(t, first.URL)
	dir := t.TempDir()
	p := createProject(t, dir, "outage")
	flags := append(realServeFlags(proxy.URL), "--retry-max-delay", "200ms", "--max-attempts", "1000")
	s := startServe(t, dir, freeAddr(t), flags...)

	held, release := proxy.arm()
	jobID, _ := uploadPDF(t, s.base, p.APIKey, p.ProjectID, realPDF)
	select {
	case <-held:
	case <-time.After(realWait):
		t.Fatal("the job never asked Ollama for embeddings")
	}
	first.Stop()
	if !first.Exited() {
		t.Fatal("Ollama still runs after Stop")
	}
	close(release)
	j := waitJobState(t, s.base, p.APIKey, jobID, func(j jobState) bool { return j.Status == store.StatusPending && j.Error != "" })
	if !strings.Contains(j.Error, "retrying") || !strings.Contains(j.Error, "Ollama") {
		t.Errorf("waiting job's error %q: want the outage and the retry", j.Error)
	}
	status, out := apiCall(t, http.MethodPost, s.base+"/upload/text", p.APIKey, map[string]any{"owner_id": p.ProjectID, "text": "Uploaded while the model server was down."})
	if status != http.StatusOK {
		t.Fatalf("upload during the outage: %d %v", status, out)
	}
	textJob := fmt.Sprint(out["job_id"])
	waitJobState(t, s.base, p.APIKey, textJob, func(j jobState) bool { return j.Status == store.StatusPending && j.Error != "" })

	second := ollamareal.Start(t)
	proxy.retarget(t, second.URL)
	for _, id := range []string{jobID, textJob} {
		if j := waitJobState(t, s.base, p.APIKey, id, ended); j.Status != store.StatusSucceeded || j.Chunks == 0 {
			t.Errorf("job %s after Ollama came back: %+v", id, j)
		}
	}
}

// TestRealOllamaModelsPullOffline runs `docsift models pull` against a
// server that cannot reach its registry: models it has are skipped (a pull
// would fail for them too), and a missing one fails with what to do.
func TestRealOllamaModelsPullOffline(t *testing.T) {
	srv := ollamareal.Start(t)
	args := []string{"models", "pull", "--ollama-url", srv.URL, "--embed-model", ollamareal.TinyEmbed.Name}
	out := mustCLI(t, append(args, "--chat-model", ollamareal.TinyChat.Name)...)
	for _, m := range []string{ollamareal.TinyEmbed.Name, ollamareal.TinyChat.Name} {
		if !strings.Contains(out, m+": already in Ollama") {
			t.Errorf("models pull printed %q; want %s skipped as present", out, m)
		}
	}
	out, err := runCLI(t, append(args, "--chat-model", "all-minilm")...)
	if !errors.Is(err, ollama.ErrRegistryUnreachable) {
		t.Fatalf("pulling a missing model offline: %v; want ErrRegistryUnreachable", err)
	}
	for _, want := range []string{"models directory", "ollama create", "ollama pull all-minilm", "library/all-minilm/"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	if !strings.Contains(out, ollamareal.TinyEmbed.Name+": already in Ollama") {
		t.Errorf("the present model was not skipped before the failure: %q", out)
	}
	if _, err := runCLI(t, append(args, "--chat-model", ollamareal.TinyChat.Name, "--update")...); !errors.Is(err, ollama.ErrRegistryUnreachable) || !strings.Contains(err.Error(), "not updated, and the copy Ollama at") || strings.Contains(err.Error(), "is not in Ollama") {
		t.Errorf("--update offline, of a model Ollama has: %v; want ErrRegistryUnreachable, saying its copy stays", err)
	}
}

// TestRealOllamaServeAutoChooses starts `docsift serve` in auto mode three
// ways and reads the log's explanation of each choice.
func TestRealOllamaServeAutoChooses(t *testing.T) {
	srv := ollamareal.Start(t)
	gone := "http://" + freeAddr(t) // nothing listens there
	for _, c := range []struct {
		name                  string
		url, embed, chat      string
		embedder, answerer    string
		embedWhy, answererWhy string
	}{
		{"models present", srv.URL, ollamareal.TinyEmbed.Name, ollamareal.TinyChat.Name,
			"ollama:tinyembed@", "ollama:tinychat", "has tinyembed (128 dimensions)", "has tinychat"},
		{"model missing", srv.URL, "all-minilm", ollamareal.TinyChat.Name,
			llm.NewBuiltin().Model(), "ollama:tinychat", "all-minilm is not pulled", "has tinychat"},
		{"ollama down", gone, ollamareal.TinyEmbed.Name, ollamareal.TinyChat.Name,
			llm.NewBuiltin().Model(), "extractive", "not reachable", "not reachable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			logFile := filepath.Join(t.TempDir(), "serve.log")
			s := startServe(t, dir, freeAddr(t), "--embedder", "auto", "--answerer", "auto", "--ollama-url", c.url,
				"--embed-model", c.embed, "--chat-model", c.chat, "--log-file", logFile)
			if err := s.stop(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			log := string(b)
			wantChoice(t, log, "embedder chosen", "embedder", c.embedder, c.embedWhy)
			wantChoice(t, log, "answerer chosen", "answerer", c.answerer, c.answererWhy)
		})
	}
}

// wantChoice finds the log line msg and checks the model it names and
// that its why says so.
func wantChoice(t *testing.T, log, msg, key, model, why string) {
	t.Helper()
	m := regexp.MustCompile(`msg="` + msg + `" ` + key + `=(\S+) why=("(?:[^"\\]|\\.)*"|\S+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no %q line in the log:\n%s", msg, log)
	}
	// A model ending in "@" stands for any digest of it.
	if m[1] != model && !(strings.HasSuffix(model, "@") && strings.HasPrefix(m[1], model)) || !strings.Contains(m[2], why) {
		t.Errorf("%s %s, why %s; want %s because %q", key, m[1], m[2], model, why)
	}
}

// TestRealOllamaBenchQueryStream runs `docsift bench query --stream`
// against a server answering with tinychat: it reports the time to the
// first piece of the answer and to the whole, the first the shorter.
func TestRealOllamaBenchQueryStream(t *testing.T) {
	srv := ollamareal.Start(t)
	dir := t.TempDir()
	p := createProject(t, dir, "bench")
	s := startServe(t, dir, freeAddr(t), realServeFlags(srv.URL)...)
	var jobs []string
	for i := range 4 {
		status, out := apiCall(t, http.MethodPost, s.base+"/upload/text", p.APIKey, map[string]any{"owner_id": p.ProjectID, "text": ollamareal.Text(i*300, 300)})
		if status != http.StatusOK {
			t.Fatalf("upload: %d %v", status, out)
		}
		jobs = append(jobs, fmt.Sprint(out["job_id"]))
	}
	for _, id := range jobs {
		if j := waitJobState(t, s.base, p.APIKey, id, ended); j.Status != store.StatusSucceeded {
			t.Fatalf("job %s: %+v", id, j)
		}
	}
	queries := filepath.Join(t.TempDir(), "queries.jsonl")
	var qs bytes.Buffer
	for i := range 3 {
		fmt.Fprintf(&qs, `{"_id": "q%d", "text": %q}`+"\n", i, ollamareal.Text(i*500+40, 8))
	}
	if err := os.WriteFile(queries, qs.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	// Answers take seconds each on a loaded machine: more than runCLI's
	// deadline allows for the whole command.
	cmd := rootCmd("test")
	var stdout bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"bench", "query", "--stream", "--json", "--url", s.base, "--key", p.APIKey, "--owner", p.ProjectID,
		"--queries", queries, "--requests", "3", "--concurrency", "1", "--timeout", realWait.String()})
	ctx, cancel := context.WithTimeout(context.Background(), realWait)
	defer cancel()
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("bench query: %v", err)
	}
	out := stdout.String()
	var res struct {
		Requests        int     `json:"requests"`
		Errors          int     `json:"errors"`
		P50Ms           float64 `json:"p50_ms"`
		P99Ms           float64 `json:"p99_ms"`
		FirstTokenP50Ms float64 `json:"first_token_p50_ms"`
		FirstTokenP99Ms float64 `json:"first_token_p99_ms"`
		FirstError      string  `json:"first_error"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("bench query printed %q: %v", out, err)
	}
	t.Logf("streamed queries with tinychat: first token p50 %.0f ms, p99 %.0f ms; whole answer p50 %.0f ms, p99 %.0f ms",
		res.FirstTokenP50Ms, res.FirstTokenP99Ms, res.P50Ms, res.P99Ms)
	if res.Errors != 0 || res.Requests != 3 {
		t.Fatalf("bench query: %+v", res)
	}
	if res.FirstTokenP50Ms <= 0 || res.FirstTokenP50Ms >= res.P50Ms {
		t.Errorf("first token p50 %.1f ms, whole answer p50 %.1f ms: the first piece must come before the end", res.FirstTokenP50Ms, res.P50Ms)
	}
}

// TestRealOllamaBenchIngestCommand runs `docsift bench ingest --embedder
// ollama`: docsift's throughput, Ollama's alone on the same requests, the
// ratio, and a second upload served by the embedding cache.
func TestRealOllamaBenchIngestCommand(t *testing.T) {
	srv := ollamareal.Start(t)
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte(ollamareal.Text(0, 1200)), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustCLI(t, "bench", "ingest", "--json", "--embedder", "ollama", "--ollama-url", srv.URL,
		"--embed-model", ollamareal.TinyEmbed.Name, "--again", file)
	var res struct {
		Chunks        int     `json:"chunks"`
		Embedder      string  `json:"embedder"`
		EmbedTexts    int     `json:"embed_texts"`
		EmbedRequests int     `json:"embed_requests"`
		RawRatio      float64 `json:"docsift_raw_ratio"`
		Raw           *struct {
			Texts          int     `json:"texts"`
			TextsPerSecond float64 `json:"texts_per_second"`
		} `json:"raw"`
		Again *struct {
			EmbedTexts int `json:"embed_texts"`
		} `json:"again"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("bench ingest printed %q: %v", out, err)
	}
	if res.Embedder != "ollama:"+ollamareal.TinyEmbed.Name || res.Chunks < 3 || res.EmbedTexts != res.Chunks || res.EmbedRequests == 0 {
		t.Errorf("bench ingest: %s", out)
	}
	// Raw Ollama gets what docsift sent: a chunk over tinyembed's 512
	// tokens went in parts.
	if res.Raw == nil || res.Raw.Texts < res.EmbedTexts || res.Raw.TextsPerSecond <= 0 || res.RawRatio <= 0 {
		t.Errorf("no raw comparison: %s", out)
	}
	if res.Again == nil || res.Again.EmbedTexts != 0 {
		t.Errorf("the second upload embedded texts: %s", out)
	}
}
