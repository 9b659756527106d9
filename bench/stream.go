package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// postStream sends a streamed query and reads its server-sent events to
// the end. It returns how long the first "answer" event took to arrive, the
// moment a user starts reading; an answer with no piece (an extractive one
// sent whole) counts its "done" event instead. An "error" event, or a
// stream that ends before "done", is an error.
func postStream(ctx context.Context, client *http.Client, url, key string, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return 0, fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	var first time.Duration
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20) // "done" repeats every chunk
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event == "answer":
			if first == 0 {
				first = time.Since(start)
			}
		case strings.HasPrefix(line, "data: ") && event == "done":
			if first == 0 {
				first = time.Since(start)
			}
			return first, nil
		case strings.HasPrefix(line, "data: ") && event == "error":
			return 0, fmt.Errorf("error event: %s", strings.TrimPrefix(line, "data: "))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading the event stream: %w", err)
	}
	return 0, errors.New("the event stream ended before its done event")
}
