package cli

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A SIGTERM stops the server cleanly; a second one, while the first waits
// for a request to finish, stops it at once, as an operator pressing
// Ctrl-C twice expects.
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

	p = startProcess(t, bin, filepath.Join(t.TempDir(), "data"), freeAddr(t))
	// A request whose body never comes holds the first stop for its
	// grace period (20 s).
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /upload/text HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"owner_id\":")
	p.signal(t, syscall.SIGTERM)
	deadline := time.Now().Add(cliWait)
	for !strings.Contains(p.log.String(), "shutting down") {
		if time.Now().After(deadline) {
			t.Fatalf("no shutdown after SIGTERM:\n%s", p.log.tail(10))
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.signal(t, syscall.SIGTERM)
	err = p.cmd.Wait()
	status, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !status.Signaled() || status.Signal() != syscall.SIGTERM {
		t.Errorf("after a second SIGTERM: %v, want the process ended by the signal, not waiting for the request", err)
	}
}

func (p *process) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}
