package ollamareal

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ollama/ollama/api"
)

const (
	// readyTimeout bounds the wait for `ollama serve` to answer.
	readyTimeout = 30 * time.Second

	// createTimeout bounds creating the models a test needs; converting the
	// nomic-sized model takes most of it on a slow machine.
	createTimeout = 5 * time.Minute

	// stopTimeout is how long the server gets to unload its runners after
	// SIGTERM before the whole process group is killed.
	stopTimeout = 10 * time.Second

	// logLimit is how much of the server's log is kept for failure reports.
	logLimit = 64 << 10

	// reportLines is how many lines of the log a failed test prints: a
	// failure report shows a window of a test's output, and the test's own
	// message comes before the log.
	reportLines = 60
)

// Config says how to start a server. The zero value starts one holding
// TinyEmbed and TinyChat with Ollama's default settings.
type Config struct {
	// Models to create (once per process) before Start returns; nil means
	// TinyEmbed and TinyChat.
	Models []Model
	// Env adds OLLAMA_* settings, e.g. OLLAMA_NUM_PARALLEL.
	Env map[string]string
}

// Server is a running `ollama serve`.
type Server struct {
	URL string // base URL, http://127.0.0.1:<port>

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has exited
	log    *tailBuffer
	stop   sync.Once
}

// Start runs a server for the test with TinyEmbed and TinyChat, and stops
// it when the test ends. Without a binary it skips the test (or fails it
// when DOCSIFT_REQUIRE_OLLAMA=1).
func Start(t testing.TB) *Server {
	t.Helper()
	return StartConfig(t, Config{})
}

// StartConfig is Start with models and settings of the caller's choice.
// In -short mode it skips (a server and its models take seconds), unless
// DOCSIFT_REQUIRE_OLLAMA=1.
func StartConfig(t testing.TB, cfg Config) *Server {
	t.Helper()
	if testing.Short() && os.Getenv(EnvRequire) != "1" {
		t.Skip("skipping the real-Ollama test in -short mode")
	}
	bin, err := FindBinary()
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%v (%s=1 requires the real server)", err, EnvRequire)
		}
		t.Skipf("skipping the real-Ollama test: %v", err)
	}
	models := cfg.Models
	if models == nil {
		models = []Model{TinyEmbed, TinyChat}
	}
	dir, err := modelsDir()
	if err != nil {
		t.Fatal(err)
	}
	s, err := launch(bin, dir, t.TempDir(), cfg.Env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("ollama serve log (its last %d lines but for model metadata and routes):\n%s", reportLines, s.Report())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	for _, m := range models {
		if err := ensureModel(ctx, s.Client(), m); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// launch starts `ollama serve` on a free loopback port and waits until it
// answers.
func launch(bin, modelsDir, home string, extra map[string]string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	// A proxy on a port nothing listens on: any registry access (a pull, a
	// version check) fails at once instead of hanging, and nothing leaves
	// the machine. Loopback traffic to the runners is never proxied.
	closed, err := freePort()
	if err != nil {
		return nil, err
	}
	proxy := "http://127.0.0.1:" + closed
	env := map[string]string{
		"OLLAMA_HOST":   "127.0.0.1:" + port,
		"OLLAMA_MODELS": modelsDir,
		"HOME":          home, // the server writes its key under ~/.ollama
		// Servers of one process share the models dir, and a starting
		// server prunes blobs no manifest names yet: another server's
		// upload in progress.
		"OLLAMA_NOPRUNE": "1",
		"HTTPS_PROXY":    proxy, "HTTP_PROXY": proxy,
		"https_proxy": proxy, "http_proxy": proxy,
		"NO_PROXY": "", "no_proxy": "",
	}
	for k, v := range extra {
		env[k] = v
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = mergeEnv(os.Environ(), env)
	log := &tailBuffer{limit: logLimit}
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so that Stop also ends the runner processes
	// the server starts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("ollamareal: start %s: %w", bin, err)
	}
	s := &Server{URL: "http://127.0.0.1:" + port, cmd: cmd, exited: make(chan struct{}), log: log}
	go func() {
		cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(readyTimeout); err != nil {
		s.Stop()
		return nil, fmt.Errorf("%w\nlog:\n%s", err, s.Log())
	}
	return s, nil
}

// waitReady polls /api/version until it answers, the process exits or the
// deadline passes.
func (s *Server) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c := s.Client()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		v, err := c.Version(ctx)
		if err == nil {
			if v != OllamaVersion {
				return fmt.Errorf("ollamareal: server reports version %q, want %s (was it built by scripts/ollama-build.sh?)", v, OllamaVersion)
			}
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("ollamareal: ollama serve exited before answering: %v", s.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("ollamareal: ollama serve did not answer within %s: %w", timeout, err)
		case <-tick.C:
		}
	}
}

// Client is an Ollama API client for the server.
func (s *Server) Client() *api.Client {
	u, _ := url.Parse(s.URL)
	return api.NewClient(u, &http.Client{})
}

// Log returns the tail of the server's output.
func (s *Server) Log() string { return s.log.String() }

// Report returns the last reportLines lines of the log that say what the
// server did: without the model metadata a runner prints on every load
// (some sixty lines) and the list of routes the server prints at start.
func (s *Server) Report() string {
	var keep []string
	for _, line := range strings.Split(strings.TrimRight(s.Log(), "\n"), "\n") {
		if !noise(line) {
			keep = append(keep, line)
		}
	}
	if len(keep) > reportLines {
		keep = keep[len(keep)-reportLines:]
	}
	return strings.Join(keep, "\n")
}

func noise(line string) bool {
	for _, p := range []string{"llama_model_loader:", "print_info:", "load:", "[GIN-debug]"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// Stop ends the server: SIGTERM, so that it unloads its runners, then
// SIGKILL to the whole process group if it has not exited in time.
func (s *Server) Stop() {
	s.stop.Do(func() {
		pgid := -s.cmd.Process.Pid
		_ = syscall.Kill(pgid, syscall.SIGTERM)
		t := time.NewTimer(stopTimeout)
		defer t.Stop()
		select {
		case <-s.exited:
		case <-t.C:
		}
		// Runners may outlive a server that exited on its own.
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-s.exited
	})
}

// Exited reports whether the server process has exited.
func (s *Server) Exited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// freePort returns a loopback port nothing listens on now. Another process
// could take it before the server binds it; the server would then fail to
// start and the test would say so.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("ollamareal: free port: %w", err)
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}

// mergeEnv returns base without the OLLAMA_* and proxy settings of the
// developer's own environment, plus set.
func mergeEnv(base []string, set map[string]string) []string {
	var out []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok || strings.HasPrefix(k, "OLLAMA_") || strings.HasSuffix(strings.ToLower(k), "_proxy") {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	limit int
	buf   []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.limit; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
