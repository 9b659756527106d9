//go:build hostile

package hostile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// server is one `docsift serve` under attack, in the suite's cgroup. It
// outlives a test when it is shared (see shared).
type server struct {
	name    string
	dir     string // data directory
	addr    string
	base    string
	flags   []string
	env     []string
	logPath string // the server's standard error, all its starts

	cmd    *exec.Cmd
	pid    int
	exited chan struct{} // closed when the process has ended
	state  *os.ProcessState

	key, project string // the default project, printed at the first start
	client       *http.Client
	watch        *meter // while an attack watches the server's memory

	mu    sync.Mutex
	acked []acked // every upload answered 200, to find again after
}

// acked is an upload the server acknowledged.
type acked struct {
	key, job, document string
}

// newServer starts a server on a fresh data dir with baseFlags, flags and
// extra environment, and reads its default project's key.
func newServer(t *testing.T, name string, flags []string, env ...string) *server {
	t.Helper()
	dir, err := os.MkdirTemp(suite.tmp, name+"-")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{
		name: name, dir: filepath.Join(dir, "data"), addr: freeAddr(t),
		flags: knownFlags(t, append(append([]string{}, baseFlags...), flags...)), env: env,
		logPath: filepath.Join(dir, "serve.log"),
		client: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{
			MaxIdleConnsPerHost: 16, IdleConnTimeout: 5 * time.Second,
		}},
	}
	s.base = "http://" + s.addr
	stdout := s.start(t)
	key := regexp.MustCompile(`DOCSIFT_API_KEY=(dsk_\w+)`).FindStringSubmatch(stdout)
	project := regexp.MustCompile(`\((prj_\w+)\)`).FindStringSubmatch(stdout)
	if key == nil || project == nil {
		t.Fatalf("the first start printed no key or project:\n%s", stdout)
	}
	s.key, s.project = key[1], project[1]
	return s
}

// freeAddr is a loopback address with a port nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// start runs the server in the suite's cgroup and waits until it answers;
// it returns what the process wrote to standard output meanwhile. The
// shell joins the group and then becomes the server, so the server and
// every child it starts are in the group from their first instruction,
// and the Go runtime sees the group's limit.
func (s *server) start(t *testing.T) string {
	t.Helper()
	args := append([]string{"serve", "--data", s.dir, "--addr", s.addr}, s.flags...)
	cmd := exec.Command("/bin/sh", append([]string{"-c", `echo $$ > "$0" && exec "$@"`, suite.cg.procs(), suite.bin}, args...)...)
	cmd.Env = append(os.Environ(), s.env...)
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	var stdout lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, logFile
	// The server does not outlive the suite, even when the suite is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cmd, s.pid, s.exited, s.state = cmd, cmd.Process.Pid, make(chan struct{}), nil
	exited := s.exited
	go func() {
		cmd.Wait()
		s.mu.Lock()
		s.state = cmd.ProcessState
		s.mu.Unlock()
		close(exited)
	}()
	deadline := time.Now().Add(serverStart)
	for {
		resp, err := s.client.Get(s.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stdout.String()
			}
		}
		if !s.alive() {
			t.Fatalf("%s: docsift serve %s ended at start (%s):\n%s%s", s.name, strings.Join(args, " "), s.exitState(), stdout.String(), s.logTail(30))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: docsift serve did not answer in %s: %v\n%s", s.name, serverStart, err, s.logTail(30))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive says whether the process is still running.
func (s *server) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// exitState says how the process ended, and whether the group's limit
// killed it.
func (s *server) exitState() string {
	s.mu.Lock()
	st := s.state
	s.mu.Unlock()
	if st == nil {
		return "running"
	}
	msg := st.String()
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		msg += fmt.Sprintf("; the group's memory limit has killed %d processes so far", suite.cg.oomKills())
	}
	return msg
}

// requireAlive fails the test when the server has died, with what its log
// said last.
func (s *server) requireAlive(t *testing.T) {
	t.Helper()
	if !s.alive() {
		t.Fatalf("%s: the server died (%s); its log ended:\n%s", s.name, s.exitState(), s.logTail(40))
	}
}

// kill9 kills the server as the OOM killer would, and waits for it.
func (s *server) kill9(t *testing.T) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// stop ends the server with SIGTERM (it saves its indexes), or SIGKILL
// after a minute.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if !s.alive() {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(time.Minute):
		t.Errorf("%s: the server did not stop within a minute of SIGTERM; killed", s.name)
		s.kill9(t)
	}
}

// restart stops the server and starts it again on the same data and
// address.
func (s *server) restart(t *testing.T, kill bool) {
	t.Helper()
	if kill {
		s.kill9(t)
	} else {
		s.stop(t)
	}
	s.start(t)
}

// log is all the server has logged.
func (s *server) log() string {
	b, _ := os.ReadFile(s.logPath)
	return string(b)
}

// logTail is the log's last n lines, each truncated at 400 bytes.
func (s *server) logTail(n int) string {
	lines := strings.Split(strings.TrimRight(s.log(), "\n"), "\n")
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		if len(l) > 400 {
			lines[i] = l[:400] + "…"
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// reply is an answer of the API.
type reply struct {
	status int
	body   []byte
	header http.Header
	took   time.Duration
}

func (r reply) json() map[string]any {
	var out map[string]any
	json.Unmarshal(r.body, &out)
	return out
}

func (r reply) str(field string) string {
	s, _ := r.json()[field].(string)
	return s
}

// do sends a request with a key (none when key is empty) and a JSON body
// (none when body is nil; raw bytes as they are).
func (s *server) do(t *testing.T, method, path, key string, body any) reply {
	t.Helper()
	r, err := s.try(method, path, key, body)
	if err != nil {
		s.requireAlive(t)
		t.Fatal(err)
	}
	return r
}

// try is do for other goroutines than the test's: it returns the error.
func (s *server) try(method, path, key string, body any) (reply, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(body)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		return reply{}, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return s.trySend(req)
}

func (s *server) send(t *testing.T, req *http.Request) reply {
	t.Helper()
	r, err := s.trySend(req)
	if err != nil {
		s.requireAlive(t)
		t.Fatal(err)
	}
	return r
}

func (s *server) trySend(req *http.Request) (reply, error) {
	start := time.Now()
	resp, err := s.client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: reading the answer: %w", req.Method, req.URL.Path, err)
	}
	return reply{status: resp.StatusCode, body: b, header: resp.Header, took: time.Since(start)}, nil
}

// must is do, failing the test unless the answer is 200.
func (s *server) must(t *testing.T, method, path, key string, body any) reply {
	t.Helper()
	r := s.do(t, method, path, key, body)
	if r.status != http.StatusOK {
		t.Fatalf("%s %s: %d %s", method, path, r.status, truncated(r.body, 300))
	}
	return r
}

// truncated is the start of b, for messages.
func truncated(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// newProject creates a project with the CLI while the server runs (it
// reaches the server through the data dir's socket).
func (s *server) newProject(t *testing.T, name string) (project, key string) {
	t.Helper()
	out, err := exec.Command(suite.bin, "project", "create", "--data", s.dir, "--name", name, "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("docsift project create: %v\n%s", err, out)
	}
	var p struct {
		ProjectID string `json:"project_id"`
		APIKey    string `json:"api_key"`
	}
	if err := json.Unmarshal(out, &p); err != nil || p.APIKey == "" {
		t.Fatalf("docsift project create printed %q: %v", out, err)
	}
	return p.ProjectID, p.APIKey
}

// ack records an upload the server answered 200.
func (s *server) ack(key string, r reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acked = append(s.acked, acked{key: key, job: r.str("job_id"), document: r.str("document_id")})
}

// uploadText uploads a text for owner; 200 is recorded as acknowledged.
func (s *server) uploadText(t *testing.T, key, owner, text string) reply {
	t.Helper()
	r := s.do(t, "POST", "/upload/text", key, map[string]any{"owner_id": owner, "text": text})
	if r.status == http.StatusOK {
		s.ack(key, r)
	}
	return r
}

// uploadFile uploads a file for owner through the API.
func (s *server) uploadFile(t *testing.T, key, owner, name string, data []byte) reply {
	t.Helper()
	req := multipartRequest(t, s.base+"/upload/file", name, data, map[string]any{"owner_id": owner})
	req.Header.Set("Authorization", "Bearer "+key)
	r := s.send(t, req)
	if r.status == http.StatusOK {
		s.ack(key, r)
	}
	return r
}

// multipartRequest is a POST of data as the file part, and of the data
// part when data is not nil.
func multipartRequest(t *testing.T, url, name string, file []byte, data map[string]any) *http.Request {
	t.Helper()
	body, contentType := multipartBody(name, file, data)
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	return req
}

const boundary = "hostile-suite-boundary-7d3f"

func multipartBody(name string, file []byte, data map[string]any) ([]byte, string) {
	var b bytes.Buffer
	if data != nil {
		j, _ := json.Marshal(data)
		fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"data\"\r\n\r\n%s\r\n", boundary, j)
	}
	fmt.Fprintf(&b, "--%s\r\nContent-Disposition: form-data; name=\"file\"; filename=%q\r\nContent-Type: application/octet-stream\r\n\r\n", boundary, name)
	b.Write(file)
	fmt.Fprintf(&b, "\r\n--%s--\r\n", boundary)
	return b.Bytes(), "multipart/form-data; boundary=" + boundary
}

// job reads a job.
func (s *server) job(t *testing.T, key, id string) map[string]any {
	t.Helper()
	return s.must(t, "GET", "/jobs/"+id, key, nil).json()
}

// waitJob polls a job until done holds of it, failing after within.
func (s *server) waitJob(t *testing.T, key, id string, within time.Duration, done func(j map[string]any) bool) (map[string]any, time.Duration) {
	t.Helper()
	start := time.Now()
	for {
		s.requireAlive(t)
		if s.watch != nil {
			s.watch.requireUnder(t, rssBound)
		}
		j := s.job(t, key, id)
		if done(j) {
			return j, time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("job %s did not get there within %s: %v", id, within, j)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ended(j map[string]any) bool {
	return j["status"] == "SUCCEEDED" || j["status"] == "FAILED"
}

// checkAcknowledged fails the test unless every upload the server
// acknowledged is still there: its document and its job found.
func (s *server) checkAcknowledged(t *testing.T) {
	t.Helper()
	s.requireAlive(t)
	s.mu.Lock()
	all := append([]acked{}, s.acked...)
	s.mu.Unlock()
	for _, a := range all {
		if r := s.do(t, "GET", "/documents/"+a.document, a.key, nil); r.status != http.StatusOK {
			t.Errorf("acknowledged document %s: %d %s", a.document, r.status, truncated(r.body, 200))
		}
		if r := s.do(t, "GET", "/jobs/"+a.job, a.key, nil); r.status != http.StatusOK {
			t.Errorf("acknowledged job %s: %d %s", a.job, r.status, truncated(r.body, 200))
		}
	}
	t.Logf("%d acknowledged uploads all found", len(all))
}

// lockedBuffer is a buffer a process's output copier writes while the
// test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// procStatus reads a field of /proc/PID/status in bytes (kB fields) or as
// it is.
func procStatus(pid int, field string) (string, bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && k == field {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// procBytes reads a kB field of /proc/PID/status (VmRSS, VmHWM) in bytes.
func procBytes(pid int, field string) int64 {
	v, ok := procStatus(pid, field)
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
	return n << 10
}

// children are the processes whose parent is pid.
func children(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil {
			continue
		}
		// The command name, in parentheses, may hold spaces: the fields
		// after it are counted from its closing parenthesis.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		if f := strings.Fields(rest); len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
