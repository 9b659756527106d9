package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLogFileReopensOnHUP(t *testing.T) {
	path := filepath.Join(t.TempDir(), "docsift.log")
	l, err := openLogFile(path)
	if err != nil {
		t.Fatal(err)
	}
	reopened := make(chan error, 1)
	stop := l.reopenOnHUP(func(err error) { reopened <- err })
	defer stop()
	l.Write([]byte("before rotation\n"))

	// What logrotate does: rename, then SIGHUP.
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reopened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not reopen the log file")
	}
	l.Write([]byte("after rotation\n"))
	old, _ := os.ReadFile(path + ".1")
	cur, _ := os.ReadFile(path)
	if string(old) != "before rotation\n" || string(cur) != "after rotation\n" {
		t.Errorf("rotated file %q, new file %q", old, cur)
	}
}

func TestLogLevel(t *testing.T) {
	for _, c := range []struct {
		level       string
		debug, info bool
	}{
		{"info", false, true},
		{"debug", true, true},
		{"WARN", false, false},
		{"error", false, false},
	} {
		var buf bytes.Buffer
		log, err := newLogger("json", c.level, &buf)
		if err != nil {
			t.Fatalf("--log-level %s: %v", c.level, err)
		}
		log.Debug("job started")
		log.Info("job succeeded")
		got := buf.String()
		if strings.Contains(got, "job started") != c.debug || strings.Contains(got, "job succeeded") != c.info {
			t.Errorf("--log-level %s wrote %q", c.level, got)
		}
	}
	for _, bad := range []string{"", "verbose", "info+2"} {
		if _, err := newLogger("text", bad, io.Discard); err == nil || !strings.Contains(err.Error(), "--log-level must be") {
			t.Errorf("--log-level %q: error %v, want one naming the levels", bad, err)
		}
	}
}
