package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/docsift/docsift/llm"
)

// brokenAnswerer writes part of an answer and fails the way a model server
// behind a proxy fails: with a Go error chain naming addresses and paths.
type brokenAnswerer struct{}

func (brokenAnswerer) Model() string { return "broken" }

func (brokenAnswerer) Answer(_ context.Context, _ string, _ []llm.Source, onDelta func(string)) (string, error) {
	if onDelta == nil {
		return "", errors.New("no stream")
	}
	onDelta("The lock gates open")
	return "The lock gates open", fmt.Errorf(`llm: chat: Post "http://10.9.8.7:11434/api/chat": read /var/lib/docsift/sock: %w`, syscall.ECONNRESET)
}

// A streamed answer that fails midway ends with an "error" event in the
// API's words, as a JSON error would say it; the failure itself, with its
// addresses and paths, goes to the log under the request's id.
func TestStreamedErrorInTheAPIsWords(t *testing.T) {
	e := newEnv(t, withAnswerer(brokenAnswerer{}))
	e.uploadText(t, e.a.key, e.a.projectID, "harbour.txt", "The harbour master opens the lock gates at six.")
	resp := e.streamQuery(t, context.Background(), map[string]any{"project_id": e.a.projectID, "query": "lock gates", "stream": true})
	defer resp.Body.Close()
	events := readEvents(t, resp, nil)
	if len(events) != 3 || events[0].name != "chunks" || events[1].name != "answer" || events[2].name != "error" {
		t.Fatalf("events = %+v", events)
	}
	var body struct{ Error string }
	if err := json.Unmarshal([]byte(events[2].data), &body); err != nil {
		t.Fatal(err)
	}
	if body.Error != "the answer model failed mid-answer: the answer is incomplete; ask again" {
		t.Errorf("the error event says %q", body.Error)
	}
	id := resp.Header.Get("X-Request-ID")
	var logged bool
	for _, line := range strings.Split(e.logs.String(), "\n") {
		logged = logged || strings.Contains(line, "request_id="+id) && strings.Contains(line, "10.9.8.7:11434") && strings.Contains(line, "level=WARN")
	}
	if !logged {
		t.Errorf("no warning with request id %s holds the failure:\n%s", id, e.logs.String())
	}
}
