// Package ollamatest runs a stand-in for an Ollama server in tests: it speaks
// the parts of Ollama's HTTP API docsift uses, with deterministic embeddings
// and replies, and can be told to misbehave (refuse connections, hang, fail
// with a status, lose a model, change dimension, cut a stream short).
//
// Real models cannot be downloaded in tests, and docsift's handling of a
// broken Ollama is exactly what needs testing, so the stand-in favours
// control over fidelity: it answers what a real server would for the
// requests docsift sends, and nothing more.
package ollamatest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
)

// Version is what /api/version reports.
const Version = "0.17.4"

// Model is a model the server has pulled (or can pull). Dim > 0 makes it an
// embedding model with that dimension; Dim == 0 a chat model.
type Model struct {
	Name string
	Dim  int
	// Context is the model's context length in tokens (the stand-in's
	// tokens: see countTokens); 0 means defaultContext.
	Context int
	// NumCtx is a num_ctx parameter of the model's Modelfile, 0 for none;
	// like the real server, inputs are truncated at the smaller of it and
	// Context.
	NumCtx int
	// Digest is what /api/tags reports; "" means one derived from the
	// name, dimension and context, so that SetDim replaces the model.
	Digest string
}

// Server is a running stand-in. Its methods are safe for concurrent use.
type Server struct {
	// URL is the server's base address, stable across Stop and Start.
	URL string

	addr string

	mu       sync.Mutex
	srv      *http.Server
	ln       net.Listener
	models   map[string]Model // pulled, by key(name)
	library  map[string]Model // pullable, by key(name)
	fails    []failure
	hangs    map[string]bool
	release  chan struct{} // closed to free hung handlers
	delay    map[string]time.Duration
	reply    func(*api.ChatRequest) string
	think    string
	truncate bool
	chatErr  string
	scale    float32
	calls    map[string]int
	inFlight map[string]int // requests being answered, by path
	peak     map[string]int // the most ever in flight, by path
	chats    []api.ChatRequest
	embeds   []api.EmbedRequest

	stallAfter int           // streamed chats stop after this many pieces...
	stall      chan struct{} // ...until this is closed; nil: no stall
	whole      int           // streamed chats written to their end
	leftMidway int           // streamed chats whose client left midway
	idle       *sync.Cond    // on mu: a request has been answered
}

// failure is a planned error answer.
type failure struct {
	path   string // "" matches every path
	status int
	left   int
}

// New starts a server holding models, and stops it when the test ends.
func New(t testing.TB, models ...Model) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("ollamatest: listen: %v", err)
	}
	s := &Server{
		addr:     ln.Addr().String(),
		models:   make(map[string]Model),
		library:  make(map[string]Model),
		hangs:    make(map[string]bool),
		release:  make(chan struct{}),
		delay:    make(map[string]time.Duration),
		calls:    make(map[string]int),
		inFlight: make(map[string]int),
		peak:     make(map[string]int),
		scale:    1,
	}
	s.idle = sync.NewCond(&s.mu)
	s.URL = "http://" + s.addr
	for _, m := range models {
		s.models[key(m.Name)] = stored(m)
	}
	s.serve(ln)
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) serve(ln net.Listener) {
	s.ln = ln
	s.srv = &http.Server{Handler: s}
	go s.srv.Serve(ln)
}

// Stop closes the listener and every connection: from now on clients get
// "connection refused", as when Ollama is not running.
func (s *Server) Stop() {
	s.mu.Lock()
	srv, ln := s.srv, s.ln
	s.srv, s.ln = nil, nil
	s.unhangLocked()
	s.mu.Unlock()
	if srv != nil {
		// Close the listener first: Serve may not have started tracking it
		// yet, and an open listener completes handshakes in the kernel, so
		// a client would connect and then be cut off instead of refused.
		ln.Close()
		srv.Close()
	}
}

// Start serves again on the same address after Stop, as when Ollama comes
// back.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("ollamatest: listen again on %s: %w", s.addr, err)
	}
	s.serve(ln)
	return nil
}

// canonical adds the ":latest" tag a bare model name implies.
func canonical(name string) string {
	if !strings.Contains(name, ":") {
		return name + ":latest"
	}
	return name
}

// key is how the real Ollama matches a name to a model: without case, with
// an implied ":latest" tag, and with the default "library/" namespace (and
// a registry host before it) optional. "TinyEmbed", "tinyembed:latest" and
// "library/tinyembed" are one model.
func key(name string) string {
	name = strings.ToLower(canonical(name))
	if first, rest, ok := strings.Cut(name, "/"); ok && strings.Count(name, "/") == 2 && strings.ContainsAny(first, ".:") {
		name = rest // a registry host
	}
	return strings.TrimPrefix(name, "library/")
}

// AddModel makes a model present, as after `ollama pull`.
func (s *Server) AddModel(m Model) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models[key(m.Name)] = stored(m)
}

// stored is m as the server keeps it: named with its tag.
func stored(m Model) Model {
	m.Name = canonical(m.Name)
	return m
}

// RemoveModel makes a model absent, as after `ollama rm`.
func (s *Server) RemoveModel(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.models, key(name))
}

// AddLibrary makes a model available to /api/pull.
func (s *Server) AddLibrary(m Model) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.library[key(m.Name)] = stored(m)
}

// SetDim changes an embedding model's dimension, as when a different model
// is pulled under the same name.
func (s *Server) SetDim(name string, dim int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m, ok := s.models[key(name)]; ok {
		m.Dim = dim
		s.models[key(name)] = m
	}
}

// SetEmbedScale multiplies every embedding by f: a real Ollama returns unit
// vectors, and a scale other than 1 checks that clients normalize anyway.
func (s *Server) SetEmbedScale(f float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scale = f
}

// FailNext makes the next n requests to path ("" for any /api/ path) fail
// with status and an Ollama-style {"error": …} body; later ones succeed.
func (s *Server) FailNext(path string, n, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails = append(s.fails, failure{path: path, status: status, left: n})
}

// Hang makes requests to path ("" for any /api/ path) block until the client
// gives up, Unhang is called or the server stops: a model stuck loading.
func (s *Server) Hang(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hangs[path] = true
}

// Unhang frees hung requests and stops hanging new ones.
func (s *Server) Unhang() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unhangLocked()
}

func (s *Server) unhangLocked() {
	clear(s.hangs)
	close(s.release)
	s.release = make(chan struct{})
}

// SetDelay delays every answer on path by d (or until the client gives up):
// a slow model, for tests of deadlines that should not fire.
func (s *Server) SetDelay(path string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay[path] = d
}

// SetReply sets how /api/chat answers; the default cites [1].
func (s *Server) SetReply(f func(*api.ChatRequest) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reply = f
}

// SetThink makes chat replies start with <think>text</think>, as reasoning
// models emit when the server does not separate their thinking.
func (s *Server) SetThink(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.think = text
}

// SetTruncateChat makes streamed chat replies end without their final
// "done" line, as when Ollama dies mid-answer.
func (s *Server) SetTruncateChat(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.truncate = on
}

// SetChatStreamError makes streamed chat replies stop halfway with an
// {"error": msg} line inside the 200 stream, as the real server reports a
// runner that died mid-answer ("an error was encountered while running the
// model: unexpected EOF"); "" turns it off.
func (s *Server) SetChatStreamError(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chatErr = msg
}

// StallChat makes streamed chat replies stop after n pieces until resume
// is called or their client leaves: a model still generating when its
// client gives up.
func (s *Server) StallChat(n int) (resume func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	stall := make(chan struct{})
	s.stallAfter, s.stall = n, stall
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.stall == stall {
			s.stall = nil
		}
		close(stall)
	}
}

// ChatStreams waits until no chat is being answered, then returns how many
// streamed chat replies were written to their end and how many their client
// left midway. The real server may then keep one of the model's slots for
// good (see chatToEnd in package llm), so a client should never leave one.
func (s *Server) ChatStreams() (whole, leftMidway int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.inFlight["/api/chat"] > 0 {
		s.idle.Wait()
	}
	return s.whole, s.leftMidway
}

// Calls returns how many requests reached path, failed ones included.
func (s *Server) Calls(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[path]
}

// PeakInFlight returns the most requests to path that were ever being
// answered at once.
func (s *Server) PeakInFlight(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peak[path]
}

// ChatRequests returns every /api/chat request received, in order.
func (s *Server) ChatRequests() []api.ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]api.ChatRequest(nil), s.chats...)
}

// EmbedRequests returns every /api/embed request received, in order.
func (s *Server) EmbedRequests() []api.EmbedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]api.EmbedRequest(nil), s.embeds...)
}

// ServeHTTP routes like Ollama: HEAD or GET / for a heartbeat, the API under
// /api/.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path == "/" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "Ollama is running")
		return
	}
	s.mu.Lock()
	s.calls[path]++
	s.inFlight[path]++
	s.peak[path] = max(s.peak[path], s.inFlight[path])
	defer func() {
		s.mu.Lock()
		s.inFlight[path]--
		s.idle.Broadcast()
		s.mu.Unlock()
	}()
	status := s.takeFailureLocked(path)
	hang := s.hangs[path] || s.hangs[""]
	release := s.release
	delay := max(s.delay[path], s.delay[""])
	s.mu.Unlock()

	if hang {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		if r.Context().Err() != nil {
			return
		}
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
		}
	}
	if status != 0 {
		writeError(w, status, fmt.Sprintf("ollamatest: injected failure (HTTP %d)", status))
		return
	}

	switch {
	case path == "/api/version" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]string{"version": Version})
	case path == "/api/tags" && r.Method == http.MethodGet:
		s.handleTags(w)
	case path == "/api/show" && r.Method == http.MethodPost:
		s.handleShow(w, r)
	case path == "/api/embed" && r.Method == http.MethodPost:
		s.handleEmbed(w, r)
	case path == "/api/chat" && r.Method == http.MethodPost:
		s.handleChat(w, r)
	case path == "/api/pull" && r.Method == http.MethodPost:
		s.handlePull(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) takeFailureLocked(path string) int {
	for i := range s.fails {
		f := &s.fails[i]
		if f.left > 0 && (f.path == "" || f.path == path) {
			f.left--
			return f.status
		}
	}
	return 0
}

// lookup returns a pulled model by any spelling of its name.
func (s *Server) lookup(name string) (Model, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.models[key(name)]
	return m, ok
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// writeError answers as Ollama does: a status and {"error": message}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// decode reads a JSON request body, answering 400 as Ollama does when it is
// missing or malformed.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		msg := err.Error()
		if msg == "EOF" {
			msg = "missing request body"
		}
		writeError(w, http.StatusBadRequest, msg)
		return false
	}
	return true
}
