package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"time"

	"github.com/docsift/docsift/eval"
)

// OwnerReads is how long the owner's reads besides queries took at its
// size, in milliseconds, each the median of a few asked one at a time:
// the pages of its document list, an upload through a hosted page (which
// looks at the session's other uploads first) and that page's list of
// them. A read that grows with the owner shows here first.
type OwnerReads struct {
	ListPageMs      float64 `json:"list_page_ms"`
	SessionUploadMs float64 `json:"session_upload_ms"`
	SessionJobsMs   float64 `json:"session_jobs_ms"`
}

// The reads of OwnerReads: pages of the default size, followed from the
// first, and uploads of one small text file each, within a session's
// default burst and backlog so that none is refused.
const (
	scaleListPages      = 20
	scaleSessionUploads = 5
)

// ownerReads measures OwnerReads on the server's first owner.
func (s *childServer) ownerReads(ctx context.Context) (OwnerReads, error) {
	var r OwnerReads
	timed := func(times *[]float64, do func() error) error {
		start := time.Now()
		err := do()
		*times = append(*times, float64(time.Since(start).Microseconds())/1000)
		return err
	}

	owner := s.owners[0]
	var pages []float64
	path := "/documents?owner_id=" + url.QueryEscape(owner)
	for range scaleListPages {
		var page struct {
			Documents  []json.RawMessage `json:"documents"`
			NextCursor string            `json:"next_cursor"`
		}
		if err := timed(&pages, func() error { return s.call(ctx, http.MethodGet, path, nil, &page) }); err != nil {
			return r, fmt.Errorf("bench: scale: list documents: %w", err)
		}
		if len(page.Documents) == 0 {
			return r, fmt.Errorf("bench: scale: GET %s listed no documents", path)
		}
		if page.NextCursor == "" {
			break
		}
		path = "/documents?owner_id=" + url.QueryEscape(owner) + "&cursor=" + url.QueryEscape(page.NextCursor)
	}
	r.ListPageMs = eval.Percentile(pages, 0.5)

	session := map[string]any{"project_id": s.project, "services": []string{"file_upload"},
		"success_url": "http://127.0.0.1/done", "cancel_url": "http://127.0.0.1/cancelled"}
	route := "/session/single-tenant"
	if owner != s.project {
		session["customer_id"], route = owner, "/session/multi-tenant"
	}
	body, _ := json.Marshal(session)
	var sess struct {
		URL string `json:"url"`
	}
	if err := s.call(ctx, http.MethodPost, route, body, &sess); err != nil {
		return r, fmt.Errorf("bench: scale: create an upload session: %w", err)
	}
	u, err := url.Parse(sess.URL)
	if err != nil {
		return r, fmt.Errorf("bench: scale: upload session URL %q: %w", sess.URL, err)
	}
	page := s.base + u.Path // the server's own address, whatever URL it gives out
	var uploads, jobs []float64
	for i := range scaleSessionUploads {
		form, contentType := sessionFile(fmt.Sprintf("note-%d.txt", i), fmt.Sprintf("A note uploaded through a hosted page, number %d.", i))
		if err := timed(&uploads, func() error { return s.pageCall(ctx, http.MethodPost, page+"/upload", contentType, form, nil) }); err != nil {
			return r, fmt.Errorf("bench: scale: upload through a hosted page: %w", err)
		}
	}
	var listed struct {
		Jobs []json.RawMessage `json:"jobs"`
	}
	if err := timed(&jobs, func() error { return s.pageCall(ctx, http.MethodGet, page+"/jobs", "", nil, &listed) }); err != nil {
		return r, fmt.Errorf("bench: scale: a hosted page's uploads: %w", err)
	}
	if len(listed.Jobs) != scaleSessionUploads {
		return r, fmt.Errorf("bench: scale: a hosted page listed %d uploads, want its %d", len(listed.Jobs), scaleSessionUploads)
	}
	r.SessionUploadMs, r.SessionJobsMs = eval.Percentile(uploads, 0.5), eval.Percentile(jobs, 0.5)
	return r, nil
}

// sessionFile is the multipart body of a hosted page's upload of one file.
func sessionFile(name, text string) ([]byte, string) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	part, _ := w.CreateFormFile("file", name)
	io.WriteString(part, text)
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// pageCall sends a request of a hosted page, which its URL's token
// authorises, and reads the answer into out (nil: only checks it is a 200).
func (s *childServer) pageCall(ctx context.Context, method, url, contentType string, body []byte, out any) error {
	msg, err := sendAs(ctx, s.client, method, url, "", contentType, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, url, err)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(msg, out)
}
