package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A SIGTERM stops the server cleanly; a second one, while the first waits
// for a webhook delivery in hand, stops it at once, as an operator
// pressing Ctrl-C twice expects.
func TestServeStopsOnSignals(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)

	p := startProcess(t, bin, filepath.Join(t.TempDir(), "data"), freeAddr(t))
	p.signal(t, syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("after one SIGTERM with nothing running: %v, want a clean exit", err)
	}
	if !strings.Contains(p.log.String(), `msg=stopped`) {
		t.Errorf("a clean stop did not log it:\n%s", p.log.tail(10))
	}

	// An endpoint that holds the delivery it is sent: the stop waits for
	// the attempt in hand (up to its 10 s), so the process is there until
	// the endpoint answers.
	attempted, release := make(chan struct{}, 10), make(chan struct{})
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		attempted <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer endpoint.Close()
	defer close(release)
	p = startProcess(t, bin, filepath.Join(t.TempDir(), "data"), freeAddr(t), "--webhook-allow-cidr", "127.0.0.1") // the endpoint is on loopback
	key := regexp.MustCompile(`DOCSIFT_API_KEY=(dsk_\w+)`).FindStringSubmatch(p.stdout.String())
	project := regexp.MustCompile(`\((prj_\w+)\)`).FindStringSubmatch(p.stdout.String())
	if key == nil || project == nil {
		t.Fatalf("first start printed no key or project:\n%s", p.stdout)
	}
	p.call(t, "POST", "/webhooks", key[1], map[string]any{"url": endpoint.URL})
	p.call(t, "POST", "/upload/text", key[1], map[string]any{"owner_id": project[1], "text": "A note about tides."})
	select {
	case <-attempted:
	case <-time.After(cliWait):
		t.Fatal("no delivery reached the endpoint")
	}
	p.signal(t, syscall.SIGTERM)
	deadline := time.Now().Add(cliWait)
	for !strings.Contains(p.log.String(), "shutting down") {
		if time.Now().After(deadline) {
			t.Fatalf("no shutdown after SIGTERM:\n%s", p.log.tail(10))
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.signal(t, syscall.SIGTERM)
	err := p.cmd.Wait()
	status, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !status.Signaled() || status.Signal() != syscall.SIGTERM {
		t.Errorf("after a second SIGTERM: %v, want the process ended by the signal, not waiting for the delivery", err)
	}
}

func (p *process) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}
