package admin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/docsift/docsift/llm"
)

// Reindexer re-embeds owners; *ingest.Engine is one.
type Reindexer interface {
	CheckOwner(owner string) error
	StaleOwners() ([]string, error)
	Reindex(ctx context.Context, owner string, progress func(done, total int)) (int, error)
}

// RunReindex re-embeds one owner, or every stale owner when owner is "",
// reporting to w and to the progress bars progress makes per owner.
func RunReindex(ctx context.Context, r Reindexer, owner string, w io.Writer, progress func(owner string) func(done, total int)) error {
	owners := []string{owner}
	if owner != "" {
		if err := r.CheckOwner(owner); err != nil {
			return err
		}
	} else {
		var err error
		if owners, err = r.StaleOwners(); err != nil {
			return err
		}
		if len(owners) == 0 {
			fmt.Fprintln(w, "every owner's vectors already come from the current embedder: nothing to do")
			return nil
		}
	}
	for _, o := range owners {
		n, err := r.Reindex(ctx, o, progress(o))
		if err != nil {
			// An Ollama that is down is said in words; the server's log
			// keeps the transport's.
			return fmt.Errorf("reindex %s: %s", o, llm.DescribeAt(err))
		}
		if n == 0 {
			fmt.Fprintf(w, "%s: nothing to re-embed (its vectors already come from the current embedder, or it has no chunks)\n", o)
			continue
		}
		fmt.Fprintf(w, "%s: %d chunks re-embedded\n", o, n)
	}
	return nil
}

// reindexEvent is one line of the admin socket's reindex stream.
type reindexEvent struct {
	Owner string `json:"owner,omitempty"`
	Done  int    `json:"done,omitempty"`
	Total int    `json:"total,omitempty"`
	Line  string `json:"line,omitempty"`
	Error string `json:"error,omitempty"`
}

// reindexHandler runs a reindex in the server and streams its progress as
// JSON lines, so `docsift reindex` shows bars while the server does the work.
func reindexHandler(r Reindexer) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		var body struct{ Owner string }
		json.NewDecoder(req.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		flush := func() {
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		lines := &lineWriter{emit: func(l string) { enc.Encode(reindexEvent{Line: l}); flush() }}
		err := RunReindex(req.Context(), r, body.Owner, lines, func(owner string) func(int, int) {
			return func(done, total int) {
				enc.Encode(reindexEvent{Owner: owner, Done: done, Total: total})
				flush()
			}
		})
		if err != nil {
			enc.Encode(reindexEvent{Error: err.Error()})
		}
	}
}

type lineWriter struct{ emit func(string) }

func (l *lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.emit(line)
	}
	return len(p), nil
}

// Reindex asks the running server to reindex and relays its progress.
func (c *Client) Reindex(ctx context.Context, owner string, w io.Writer, progress func(owner string) func(done, total int)) error {
	b, _ := json.Marshal(map[string]string{"Owner": owner})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://docsift/reindex", strings.NewReader(string(b)))
	if err != nil {
		return err
	}
	client := *c.http
	client.Timeout = 0 // a reindex takes as long as it takes
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("admin: socket: %w", err)
	}
	defer resp.Body.Close()
	bars := map[string]func(int, int){}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev reindexEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("admin: socket: %w", err)
		}
		switch {
		case ev.Error != "":
			return errors.New(ev.Error)
		case ev.Line != "":
			fmt.Fprintln(w, ev.Line)
		case ev.Owner != "":
			if bars[ev.Owner] == nil {
				bars[ev.Owner] = progress(ev.Owner)
			}
			bars[ev.Owner](ev.Done, ev.Total)
		}
	}
	return sc.Err()
}
