package cli

import (
	"os"
	"path/filepath"
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
