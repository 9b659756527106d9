package ollama

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/docsift/docsift/internal/redact"
	"github.com/docsift/docsift/llm"
	"github.com/ollama/ollama/api"
)

const (
	// DefaultURL is where `ollama serve` listens unless told otherwise.
	DefaultURL = "http://127.0.0.1:11434"

	// DefaultEmbedModel is snowflake-arctic-embed:xs: 22M parameters, 384
	// dimensions, a 512-token context that holds a typical chunk (about 300
	// tokens). Its authors publish an MTEB retrieval nDCG@10 of 50.15,
	// against nomic-embed-text's 53.01, and a model of its sizes took 0.38
	// of the CPU time of a nomic-sized one to embed a chunk on the
	// real Ollama server (BenchmarkRealOllamaEmbedModels; docs/benchmarks.md
	// has the table). On a CPU, where
	// indexing waits on the embedder, that is the better trade; users with
	// a GPU or a few documents can take nomic-embed-text with
	// --embed-model. all-minilm is as fast but scores 41.95, and its
	// authors truncate inputs at 256 word pieces, less than a chunk.
	DefaultEmbedModel = "snowflake-arctic-embed:xs"

	// DefaultChatModel is qwen2.5:1.5b: about 1 GB, fast enough on a CPU to
	// answer in seconds, with a 32K context that holds every retrieved chunk,
	// and it follows the "answer only from the sources, cite [n]" instruction
	// more reliably than other models of its size. Users with a GPU get
	// better answers from qwen2.5:7b or llama3.1:8b with --chat-model.
	DefaultChatModel = "qwen2.5:1.5b"

	// DefaultBatchSize is the most texts that go into one /api/embed
	// call: enough to amortise the request for a fast model or a GPU.
	// Below it, batches are sized by the model's measured speed to take
	// about half a second each (see batch.go), so that a slow model
	// on a CPU gets small batches and a query never waits long behind
	// them.
	DefaultBatchSize = 32

	// DefaultTimeout bounds every call. It is generous because the
	// first call after Ollama starts loads the model from disk, and a CPU
	// writes a paragraph-long answer in tens of seconds.
	DefaultTimeout = 2 * time.Minute

	// defaultPort is the port Ollama's own clients assume when
	// OLLAMA_HOST names only a host.
	defaultPort = "11434"
)

// Config says where Ollama is and which models to use. The zero value
// works: every empty field takes its default.
type Config struct {
	// URL is one Ollama server or several, comma-separated; default:
	// OLLAMA_HOST, else DefaultURL. With several, ingest spreads its
	// batches over them and each query goes to the least busy one.
	URL        string
	EmbedModel string // default: DefaultEmbedModel
	ChatModel  string // default: DefaultChatModel
	BatchSize  int    // texts per /api/embed call; default DefaultBatchSize
	// Timeout bounds each call (one embedding batch, one answer, one probe).
	// For a model pull it bounds the wait for the next progress line, since
	// a whole download may rightly take an hour.
	Timeout    time.Duration
	HTTPClient *http.Client // default: a client with no overall timeout
}

// WithDefaults returns c with every empty field set to its default, as the
// constructors use it: what start-up logs and `docsift models pull` show.
func (c Config) WithDefaults() Config {
	if c.URL == "" {
		c.URL = URLFromEnv()
	}
	if c.EmbedModel == "" {
		c.EmbedModel = DefaultEmbedModel
	}
	if c.ChatModel == "" {
		c.ChatModel = DefaultChatModel
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.HTTPClient == nil {
		// Deadlines come from contexts, per call; a Client.Timeout would
		// also end a long model pull early.
		c.HTTPClient = &http.Client{}
	}
	return c
}

// URLFromEnv returns OLLAMA_HOST, the variable Ollama's own tools read,
// or DefaultURL when it is unset.
func URLFromEnv() string {
	if h := strings.TrimSpace(os.Getenv("OLLAMA_HOST")); h != "" {
		return h
	}
	return DefaultURL
}

// parseURL accepts what users write in OLLAMA_HOST: a full URL, a
// host:port, or a bare host (which means port 11434, as for Ollama itself).
func parseURL(s string) (*url.URL, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		host, _, _ := strings.Cut(s, "/")
		if _, _, err := net.SplitHostPort(host); err != nil {
			s = strings.Replace(s, host, net.JoinHostPort(strings.Trim(host, "[]"), defaultPort), 1)
		}
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		// Not url.Parse's own words: they quote the URL, and parts of it
		// (a password read as a port) without it.
		return nil, fmt.Errorf("llm: ollama url %q: not a URL such as http://127.0.0.1:11434", redact.URL(s))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("llm: ollama url %q: scheme must be http or https", redact.URL(s))
	}
	if u.Host == "" {
		return nil, fmt.Errorf("llm: ollama url %q: no host", redact.URL(s))
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}

// Client is a connection to one Ollama server: health checks and model
// management. The embedder and answerer each hold one per server, and keep
// in it how busy and how healthy that server is (see endpoints.go).
type Client struct {
	api     *api.Client
	url     string
	shown   string // url without its password, for messages and logs
	timeout time.Duration

	health endpointHealth
}

// NewClient checks cfg and returns a client of its one server (cfg.URL
// naming several is an error: NewClients takes them). It does no I/O:
// Ollama may start after docsift does.
func NewClient(cfg Config) (*Client, error) {
	cs, err := NewClients(cfg)
	if err != nil {
		return nil, err
	}
	if len(cs) > 1 {
		return nil, fmt.Errorf("llm: ollama url %q: one server expected, got %d", redact.Text(cfg.URL), len(cs))
	}
	return cs[0], nil
}

// NewClients returns a client per server cfg.URL names (a
// comma-separated list). It does no I/O.
func NewClients(cfg Config) ([]*Client, error) {
	cfg = cfg.WithDefaults()
	urls, err := parseURLs(cfg.URL)
	if err != nil {
		return nil, err
	}
	out := make([]*Client, len(urls))
	for i, u := range urls {
		out[i] = &Client{api: api.NewClient(u, cfg.HTTPClient), url: u.String(), shown: redact.URL(u.String()), timeout: cfg.Timeout}
	}
	return out, nil
}

// URL is the server's base URL, with its credentials if it has any: for
// connecting to it.
func (c *Client) URL() string { return c.url }

// String is the server's base URL without its password, for messages.
func (c *Client) String() string { return c.shown }

// Version returns the server's version; it is the cheapest proof that the
// server is up.
func (c *Client) Version(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	v, err := c.api.Version(ctx)
	if err != nil {
		return "", c.wrap("version", err)
	}
	return v, nil
}

// Check reports whether the server answers and has every named model, with
// an error that says what to run when not.
func (c *Client) Check(ctx context.Context, models ...string) error {
	if _, err := c.Version(ctx); err != nil {
		return err
	}
	for _, m := range models {
		if err := c.HasModel(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// HasModel returns nil when model is pulled, a *llm.ModelNotFoundError when it is
// not, and another error when the server could not say. It asks /api/show
// rather than scanning /api/tags so that Ollama itself resolves the name
// ("nomic-embed-text" is "nomic-embed-text:latest").
func (c *Client) HasModel(ctx context.Context, model string) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if _, err := c.api.Show(ctx, &api.ShowRequest{Model: model}); err != nil {
		return c.wrap("show "+model, c.modelError(model, err))
	}
	return nil
}

// Pull downloads model, calling progress (when non-nil) with each update
// Ollama sends: bytes completed and total of the layer being fetched (both
// zero for steps without a size) and the status line. The whole pull has no
// deadline, but a stall longer than the configured timeout ends it.
func (c *Client) Pull(ctx context.Context, model string, progress func(completed, total int64, status string)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := time.AfterFunc(c.timeout, func() {
		cancel(fmt.Errorf("no progress for %s: %w", c.timeout, context.DeadlineExceeded))
	})
	defer stall.Stop()

	var success bool
	err := c.api.Pull(ctx, &api.PullRequest{Model: model}, func(p api.ProgressResponse) error {
		stall.Reset(c.timeout)
		if p.Status == "success" {
			success = true
		}
		if progress != nil {
			progress(p.Completed, p.Total, p.Status)
		}
		return nil
	})
	if err == nil && !success {
		err = errIncompleteStream
	}
	if err != nil && strings.Contains(err.Error(), "file does not exist") {
		// Ollama's answer for a name its registry does not know. The real
		// server has streamed "pulling manifest" with a 200 by then, so it
		// comes as an error line of the stream (a plain error from the
		// client), not as a StatusError; a 500 when not streaming.
		err = llm.Permanent(fmt.Errorf("no model named %s in the Ollama library (check the spelling and tag): %w", model, err))
	} else if err != nil && registryUnreachable(err) {
		err = fmt.Errorf("%w: %w", ErrRegistryUnreachable, err)
	}
	if err != nil {
		// The client stops reading quietly when its context ends; say why.
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
		return c.wrap("pull "+model, err)
	}
	return nil
}

// ErrRegistryUnreachable is a pull that failed because the Ollama server
// could not reach its model registry: offline, firewalled, or behind a proxy
// it cannot use. Ollama asks the registry even for a model it has, so a
// pull offline fails whatever is present; callers check HasModel first.
var ErrRegistryUnreachable = errors.New("the Ollama server cannot reach its model registry")

// registryUnreachable reports whether a pull's error is Ollama failing to
// fetch the manifest over the network. The server sends it as text (an
// error line in a 200 stream), "pull model manifest: Get \"https://…\":
// dial tcp …" or the like, so the text is all there is to go by.
func registryUnreachable(err error) bool {
	msg := err.Error()
	if !strings.Contains(msg, "pull model manifest") {
		return false
	}
	for _, s := range []string{"dial tcp", "proxyconnect", "lookup ", "no such host", "connection refused", "i/o timeout", "network is unreachable", "TLS handshake", "Client.Timeout"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// errIncompleteStream is a streamed response that ended without its final
// message: the server or the connection went away mid-answer.
var errIncompleteStream = llm.Transient(errors.New("the stream ended before the server finished (did Ollama restart?)"))

// modelError turns Ollama's "model not found" answers into a
// *llm.ModelNotFoundError; other errors pass through.
func (c *Client) modelError(model string, err error) error {
	var se api.StatusError
	if errors.As(err, &se) && se.StatusCode == http.StatusNotFound {
		return &llm.ModelNotFoundError{Model: model, URL: c.shown}
	}
	return err
}

// wrap puts an error in the package's voice and, for connection failures
// and time-outs, says in a user's words what happened (see llm.Describe).
// The server's answers worth retrying are marked so (see markStatus).
func (c *Client) wrap(op string, err error) error {
	var opErr *net.OpError
	switch {
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return &llm.ServerError{Op: "ollama " + op, Plain: "Ollama is not reachable (start it with `ollama serve`, or set --ollama-url)",
			At: fmt.Sprintf("Ollama is not reachable at %s (start it with `ollama serve`, or set --ollama-url)", c.shown), Err: err}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
		return &llm.ServerError{Op: "ollama " + op, Plain: "lost the connection to Ollama (did it stop or restart?)",
			At: fmt.Sprintf("lost the connection to Ollama at %s (did it stop or restart?)", c.shown), Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &llm.ServerError{Op: "ollama " + op, Plain: "Ollama did not answer in time", At: fmt.Sprintf("Ollama at %s did not answer in time", c.shown), Err: err}
	}
	return fmt.Errorf("llm: ollama %s: %w", op, markStatus(err))
}

// markStatus marks the server's answers that are worth retrying later
// (llm.IsTransient): an internal failure (5xx), an overload (429) or a
// request time-out (408). Other statuses, a rejected request or a
// refused authorization, are left as they are: not worth retrying.
func markStatus(err error) error {
	var se api.StatusError
	if errors.As(err, &se) && (se.StatusCode >= 500 || se.StatusCode == http.StatusTooManyRequests || se.StatusCode == http.StatusRequestTimeout) {
		return llm.Transient(err)
	}
	return err
}
