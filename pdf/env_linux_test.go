package pdf

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWorkerEnvironment looks at a real worker's environment in /proc,
// and at that of the Tesseract it runs, while they run: the server's
// secrets set in the parent's environment are in neither; the worker's own
// settings and PATH are.
func TestWorkerEnvironment(t *testing.T) {
	t.Setenv("DOCSIFT_GOOGLE_CLIENT_SECRET", "client-secret")
	t.Setenv("DOCSIFT_STORE", "postgres://docsift:db-password@127.0.0.1/docsift")
	t.Setenv("UNRELATED_TOKEN", "token")
	bin, dir := fakeTesseract(t, `echo $$ >"$DIR/started"
exec sleep 600`)
	fifo := filepath.Join(dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := ExtractWith(ctx, FormatPDF, blankScan(1), Options{
			OCR:     OCR{Binary: bin, PageTimeout: 10 * time.Minute},
			sandbox: stateDir(dir),
		})
		done <- err
	}()
	f, err := os.Open(fifo) // blocks until the stand-in opens it to write
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(f).ReadString('\n')
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	tesseract, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	st, ok := readProcStat(tesseract)
	if !ok {
		t.Fatalf("the stand-in %d vanished", tesseract)
	}
	for _, proc := range []struct {
		name string
		pid  int
		own  []string
	}{
		{"worker", st.ppid, []string{workerEnv + "=" + workerModeExtract, workerParentEnv + "=" + strconv.Itoa(os.Getpid())}},
		{"Tesseract", tesseract, []string{"OMP_THREAD_LIMIT=1"}},
	} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", proc.pid))
		if err != nil {
			t.Fatal(err)
		}
		env := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		names := map[string]string{}
		for _, kv := range env {
			name, value, _ := strings.Cut(kv, "=")
			names[name] = value
		}
		for _, secret := range []string{"DOCSIFT_GOOGLE_CLIENT_SECRET", "DOCSIFT_STORE", "UNRELATED_TOKEN"} {
			if _, ok := names[secret]; ok {
				t.Errorf("the %s's environment holds %s", proc.name, secret)
			}
		}
		for _, kv := range append(proc.own, "PATH="+os.Getenv("PATH")) {
			name, value, _ := strings.Cut(kv, "=")
			if names[name] != value {
				t.Errorf("the %s's %s = %q, want %q", proc.name, name, names[name], value)
			}
		}
		if len(env) > len(workerEnvKept)+8 {
			t.Errorf("the %s's environment has %d variables: %q", proc.name, len(env), env)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(processTimeout):
		t.Fatal("the extraction did not end when cancelled")
	}
}
