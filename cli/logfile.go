package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// logFile is a log file that can be reopened under its name, so that
// logrotate (or any rotation that renames the file) can move it away and
// send SIGHUP: the server then writes to a new file at the old path instead
// of on into the renamed one.
type logFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openLogFile(path string) (*logFile, error) {
	l := &logFile{path: path}
	if err := l.reopen(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// reopen opens the path anew; on failure the old file stays in use.
func (l *logFile) reopen() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("log file: %w", err)
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return nil
}

// reopenOnHUP reopens l each time the process gets SIGHUP, telling done
// how each reopen went (nil: it worked), until the returned function is
// called.
func (l *logFile) reopenOnHUP(done func(error)) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-hup:
				done(l.reopen())
			case <-quit:
				return
			}
		}
	}()
	return func() {
		signal.Stop(hup)
		close(quit)
		l.mu.Lock()
		l.f.Close()
		l.mu.Unlock()
	}
}

// logOutput is where the server's log goes: the file at path, reopened on
// SIGHUP, or standard error when path is empty.
func logOutput(path string) (io.Writer, func(), error) {
	if path == "" {
		return os.Stderr, func() {}, nil
	}
	l, err := openLogFile(path)
	if err != nil {
		return nil, nil, err
	}
	stop := l.reopenOnHUP(func(err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "docsift: reopening the log file on SIGHUP failed:", err)
		}
	})
	return l, stop, nil
}
