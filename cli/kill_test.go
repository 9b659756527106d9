package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docsift/docsift/webhook"
)

// buildBinary builds docsift into dir, for tests that need a process they
// can kill.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "docsift")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/docsift/docsift").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is `docsift serve` running as a child process.
type process struct {
	cmd    *exec.Cmd
	stdout *lockedBuffer
	log    *lockedBuffer // standard error: shown when the test fails
	base   string
}

// lockedBuffer is a buffer the child's output copier writes while the test
// reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// tail is the last n lines written.
func (b *lockedBuffer) tail(n int) string {
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startProcess(t *testing.T, bin, dir, addr string, flags ...string) *process {
	t.Helper()
	args := append([]string{"serve", "--data", dir, "--addr", addr, "--workers", "1", "--embedder", "builtin", "--answerer", "extractive"}, flags...)
	p := &process{cmd: exec.Command(bin, args...), stdout: &lockedBuffer{}, log: &lockedBuffer{}, base: "http://" + addr}
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		if t.Failed() {
			t.Logf("log of docsift serve at %s:\n%s", p.base, p.log.tail(60))
		}
	})
	deadline := time.Now().Add(cliWait)
	for {
		resp, err := http.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("docsift serve did not answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *process) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.cmd.Wait()
}

func (p *process) call(t *testing.T, method, path, key string, body any) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %d %v", method, path, resp.StatusCode, out)
	}
	return out
}

func TestWebhookDeliveriesSurviveKill9(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	srv := startProcess(t, bin, dir, addr, "--webhook-first-retry", "50ms", "--webhook-allow-cidr", "127.0.0.1")
	key := regexp.MustCompile(`DOCSIFT_API_KEY=(dsk_\w+)`).FindStringSubmatch(srv.stdout.String())
	project := regexp.MustCompile(`\((prj_\w+)\)`).FindStringSubmatch(srv.stdout.String())
	if key == nil || project == nil {
		t.Fatalf("first start printed no key or project:\n%s", srv.stdout)
	}

	var mu sync.Mutex
	var secret string
	failing := true
	tried := map[string]bool{}     // event ids attempted
	delivered := map[string]bool{} // event ids answered 200
	changed := make(chan struct{}, 1)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if err := webhook.Verify(secret, r.Header.Get(webhook.SignatureHeader), body, time.Minute, time.Now()); err != nil {
			t.Errorf("bad signature: %v", err)
		}
		id := r.Header.Get(webhook.EventIDHeader)
		tried[id] = true
		if !failing {
			delivered[id] = true
		}
		select {
		case changed <- struct{}{}:
		default:
		}
		if failing {
			http.Error(w, "down", http.StatusInternalServerError)
		}
	}))
	defer rcv.Close()
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		timeout := time.After(cliWait)
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			select {
			case <-changed:
			case <-timeout:
				t.Fatalf("never: %s", what)
			}
		}
	}

	wh := srv.call(t, "POST", "/webhooks", key[1], map[string]any{"url": rcv.URL})
	mu.Lock()
	secret = wh["secret"].(string)
	mu.Unlock()
	const uploads = 5
	for i := range uploads {
		srv.call(t, "POST", "/upload/text", key[1], map[string]any{"owner_id": project[1], "text": fmt.Sprintf("document %d about tides", i)})
	}
	// Every job ended and its delivery was tried (and refused).
	waitUntil("every event attempted", func() bool { return len(tried) == uploads })
	srv.kill9(t)

	mu.Lock()
	failing = false
	mu.Unlock()
	again := startProcess(t, bin, dir, addr, "--webhook-first-retry", "50ms", "--webhook-allow-cidr", "127.0.0.1")
	waitUntil("every event delivered after the restart", func() bool { return len(delivered) == uploads })

	list := again.call(t, "GET", "/webhooks/"+wh["webhook_id"].(string)+"/deliveries", key[1], nil)
	ds := list["deliveries"].([]any)
	if len(ds) != uploads {
		t.Fatalf("deliveries listed: %d", len(ds))
	}
	// The last attempt is recorded just after the receiver answers.
	for _, d := range ds {
		if s := d.(map[string]any)["status"]; s != "delivered" && s != "pending" {
			t.Errorf("delivery %v", d)
		}
	}
}
