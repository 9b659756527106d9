package server_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/docsift/docsift/llm"
)

// hangingAnswerer answers nothing until its request ends.
type hangingAnswerer struct{ started chan struct{} }

func (hangingAnswerer) Model() string { return "hanging" }

func (h hangingAnswerer) Answer(ctx context.Context, _ string, _ []llm.Source, _ func(string)) (string, error) {
	close(h.started)
	<-ctx.Done()
	return "", ctx.Err()
}

// A client that goes away before its answer is not the server's failure:
// the access log says 499 (as nginx does, "client closed request"), and no
// error is logged for it.
func TestClientGoneIsNotAnError(t *testing.T) {
	h := hangingAnswerer{started: make(chan struct{})}
	e := newEnv(t, withAnswerer(h))
	e.uploadText(t, e.a.key, e.a.projectID, "harbour.txt", "The harbour master opens the lock gates at six.")

	ctx, cancel := context.WithCancel(context.Background())
	body := jsonBytes(map[string]any{"project_id": e.a.projectID, "query": "lock gates"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"/query/project", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+e.a.key)
	req.Header.Set("Content-Type", "application/json")
	failed := make(chan error)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		failed <- err
	}()
	<-h.started
	cancel()
	if err := <-failed; err == nil {
		t.Fatal("the query was answered after its client went away")
	}
	e.srv.Close() // waits for the handler to end and log the request

	logs := e.logs.String()
	var line string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "msg=request ") && strings.Contains(l, "route=/query/project") {
			line = l
		}
	}
	if !strings.Contains(line, "status=499") {
		t.Errorf("the query's access log line is %q, want status 499", line)
	}
	if strings.Contains(logs, "level=ERROR") {
		t.Errorf("an error was logged for a client that went away:\n%s", logs)
	}
}
