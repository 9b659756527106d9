package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// childDefaults fills in what a benchmark of child servers was not told:
// the words per document, the uploads in flight, where progress goes
// (nowhere) and the docsift executable (this one).
func childDefaults(words, uploaders *int, progress *io.Writer, binary *string) error {
	if *words <= 0 {
		*words = ScaleDefaultWords
	}
	if *uploaders <= 0 {
		*uploaders = ScaleDefaultUploaders
	}
	if *progress == nil {
		*progress = io.Discard
	}
	if *binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		*binary = exe
	}
	return nil
}

// childServer is a child `docsift serve` of a benchmark.
type childServer struct {
	cmd          *exec.Cmd
	start        time.Time // just before the process started
	exited       chan struct{}
	base         string
	metrics      string // the URL of its Prometheus metrics
	key, project string
	// owners are the owners documents go to in turn: the project, or
	// its customers (see ScaleConfig.Customers).
	owners []string
	client *http.Client
}

// keyLine matches the key line the first start prints, and
// projectLine the project it belongs to.
var (
	keyLine     = regexp.MustCompile(`DOCSIFT_API_KEY=(dsk_\S+)`)
	projectLine = regexp.MustCompile(`created project "default" \((prj_\S+)\)`)
)

// startChildServer starts docsift serve on dir and a free port, with
// flags added to its own. The first start on dir prints the default
// project's key; later ones reuse it from the file it is kept in beside
// the data (written there beforehand when the key comes from elsewhere,
// as for the second node of a cluster), and then return without waiting
// for the server to answer.
func startChildServer(ctx context.Context, bin, dir string, flags ...string) (*childServer, error) {
	// Under the server's default limit of one client's connections,
	// which a burst of requests would otherwise pass while some close
	// (see server.Serve).
	return startChildServerConns(ctx, bin, dir, 240, flags...)
}

// startChildServerConns is startChildServer with its client opening at
// most conns connections.
func startChildServerConns(ctx context.Context, bin, dir string, conns int, flags ...string) (*childServer, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	metricsAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--data", data, "--addr", addr, "--metrics-addr", metricsAddr,
		"--embedder", "builtin", "--answerer", "extractive", "--log-file", filepath.Join(dir, "server.log")}, flags...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start docsift serve: %w", err)
	}
	s := &childServer{cmd: cmd, exited: make(chan struct{}), base: "http://" + addr, metrics: "http://" + metricsAddr + "/metrics", start: start,
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1024, MaxConnsPerHost: conns}}}
	found := make(chan [2]string, 1)
	go func() {
		var key, project string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := keyLine.FindStringSubmatch(sc.Text()); m != nil {
				key = m[1]
			}
			if m := projectLine.FindStringSubmatch(sc.Text()); m != nil {
				project = m[1]
			}
			if key != "" && project != "" {
				found <- [2]string{key, project}
				key = ""
			}
		}
		io.Copy(io.Discard, out)
		cmd.Wait()
		close(s.exited)
	}()
	keyFile := filepath.Join(dir, "key")
	if b, err := os.ReadFile(keyFile); err == nil {
		s.key, s.project, _ = strings.Cut(string(b), " ")
		return s, nil
	}
	select {
	case kp := <-found:
		s.key, s.project = kp[0], kp[1]
	case <-s.exited:
		return nil, fmt.Errorf("bench: docsift serve exited before printing its key; see %s", filepath.Join(dir, "server.log"))
	case <-time.After(time.Minute):
		s.kill()
		return nil, errors.New("bench: docsift serve printed no key within a minute")
	}
	if err := os.WriteFile(keyFile, []byte(s.key+" "+s.project), 0o600); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return s, s.waitHealthy(ctx)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("bench: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (s *childServer) pid() int { return s.cmd.Process.Pid }

// kill ends the child with SIGKILL, as a crash would, and waits for it.
func (s *childServer) kill() {
	if s == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// stop asks the child to shut down (it snapshots its indexes) and waits.
func (s *childServer) stop() error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("bench: stop docsift serve: %w", err)
	}
	<-s.exited
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("bench: docsift serve exited with status %d at shutdown", code)
	}
	return nil
}

func (s *childServer) waitHealthy(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := s.client.Get(s.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("bench: docsift serve did not answer: %w", err)
		}
		time.Sleep(scalePoll)
	}
}

// makeOwners registers n customers of the server's project, one at a
// time, and returns their ids; with none, the owner is the project.
func (s *childServer) makeOwners(ctx context.Context, n int) ([]string, error) {
	if n <= 0 {
		return []string{s.project}, nil
	}
	owners := make([]string, n)
	for i := range owners {
		body, _ := json.Marshal(map[string]any{"project_id": s.project, "name": fmt.Sprintf("customer %d", i)})
		var c struct {
			ID string `json:"customer_id"`
		}
		if err := s.call(ctx, http.MethodPost, "/customer/create", body, &c); err != nil {
			return nil, fmt.Errorf("bench: scale: %w", err)
		}
		owners[i] = c.ID
	}
	return owners, nil
}

// ownerOf returns the owner of document number doc: the owners in turn.
func (s *childServer) ownerOf(doc int) string { return s.owners[doc%len(s.owners)] }

// ownersOf is ownerOf of each of docs.
func (s *childServer) ownersOf(docs []int) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = s.ownerOf(d)
	}
	return out
}

// firstQuery sends q to owner until the answer has chunks (and, with
// caughtUp, no warning that the index is still catching up) and returns
// the seconds since the process started.
func (s *childServer) firstQuery(ctx context.Context, owner, q string, caughtUp bool) (float64, error) {
	path, field := queryRoute(owner)
	body, _ := json.Marshal(map[string]any{field: owner, "query": q, "top_k": 5})
	deadline := time.Now().Add(scaleStartWait)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		var out struct {
			Chunks   []json.RawMessage `json:"chunks"`
			Warnings []string          `json:"warnings"`
		}
		err := s.call(ctx, http.MethodPost, path, body, &out)
		catching := slices.ContainsFunc(out.Warnings, func(w string) bool { return strings.Contains(w, "catching up") })
		if err == nil && len(out.Chunks) > 0 && !(caughtUp && catching) {
			return time.Since(s.start).Seconds(), nil
		}
		if err == nil {
			err = errors.New("no chunks in the answer, or still catching up")
		}
		last = err
		// Waiting for the catch-up, ask less often: queries sent every
		// few milliseconds would take the cores it needs.
		poll := scalePoll
		if caughtUp {
			poll = scaleCatchUpPoll
		}
		select {
		case <-s.exited:
			return 0, fmt.Errorf("bench: scale: docsift serve exited before answering: %w", last)
		case <-time.After(poll):
		}
	}
	return 0, fmt.Errorf("bench: scale: no answer with chunks: %w", last)
}

// call sends a JSON request and decodes a 200 answer into out.
func (s *childServer) call(ctx context.Context, method, path string, body []byte, out any) error {
	msg, err := send(ctx, s.client, method, s.base+path, s.key, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return json.Unmarshal(msg, out)
}
