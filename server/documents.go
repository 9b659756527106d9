package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/store"
	"github.com/labstack/echo/v4"
)

// jobResponse is a job as GET /jobs/{job_id} shows it.
type jobResponse struct {
	JobID      string `json:"job_id"`
	OwnerID    string `json:"owner_id"`
	DocumentID string `json:"document_id"`
	Status     string `json:"status"`
	Error      string `json:"error,omitempty"`
	Chunks     int    `json:"chunks"`
	// ChunksEmbedded is how many of Chunks have their vector; the others
	// are found by their words only until they do.
	ChunksEmbedded int       `json:"chunks_embedded"`
	Attempts       int       `json:"attempts"`
	NextAttempt    time.Time `json:"next_attempt_at,omitzero"`
	Progress       *progress `json:"progress,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// progress is how far a running job has read its document.
type progress struct {
	PagesDone int `json:"pages_done"`
	Pages     int `json:"pages"`
}

func jobOf(j *store.Job) jobResponse {
	r := jobResponse{
		JobID: j.ID, OwnerID: j.OwnerID, DocumentID: j.DocumentID, Status: j.Status,
		Error: j.Error, Chunks: j.Chunks, ChunksEmbedded: j.ChunksEmbedded, Attempts: j.Attempts, NextAttempt: j.NotBefore,
		CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt,
	}
	if p := j.Progress; p != nil && j.Status == store.StatusProcessing {
		r.Progress = &progress{PagesDone: p.PagesDone, Pages: p.Pages}
	}
	return r
}

// documentResponse is a document as the /documents routes show it.
type documentResponse struct {
	DocumentID string            `json:"document_id"`
	ProjectID  string            `json:"project_id"`
	OwnerID    string            `json:"owner_id"`
	Name       string            `json:"name"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	Format     string            `json:"format"`
	Size       int64             `json:"size"`
	Pages      int               `json:"pages,omitempty"`
	JobID      string            `json:"job_id"`
	Status     string            `json:"status"`
	Error      string            `json:"error,omitempty"`
	Chunks     int               `json:"chunks"`
	CreatedAt  time.Time         `json:"created_at"`
	UpdatedAt  time.Time         `json:"updated_at"`
	ExternalID string            `json:"external_id,omitempty"`
}

func documentOf(d *store.Document) documentResponse {
	return documentResponse{
		DocumentID: d.ID, ProjectID: d.ProjectID, OwnerID: d.OwnerID, Name: d.Name,
		Metadata: d.Metadata, Format: d.Format, Size: d.Size, Pages: d.Pages,
		JobID: d.JobID, Status: d.Status, Error: d.Error, Chunks: d.Chunks,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, ExternalID: d.ExternalID,
	}
}

func (s *Server) getJob(c echo.Context) error {
	id := c.Param("job_id")
	j, err := s.store.Job(id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && j.ProjectID != project(c).ID) {
		return notFound("job %s not found", clip.String(id))
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, jobOf(j))
}

// Documents are listed a page at a time: an owner may hold a million, whose
// list would be hundreds of megabytes to build in memory and to send.
const (
	defaultDocumentPage = 100
	maxDocumentPage     = 1000
)

// listDocuments lists an owner's documents newest first, a page at a time
// (limit, and cursor: the next_cursor of the page before), or, with
// external_id, the one document holding that external id (none when no
// document does).
func (s *Server) listDocuments(c echo.Context) error {
	owner, err := s.ownerOf(c, c.QueryParam("owner_id"))
	if err != nil {
		return err
	}
	if c.QueryParams().Has("external_id") {
		return s.documentByExternalID(c, owner, c.QueryParam("external_id"))
	}
	limit, cursor, err := queryPage(c, defaultDocumentPage, maxDocumentPage, store.PrefixDocument)
	if err != nil {
		return err
	}
	docs, next, err := s.store.Documents(owner, cursor, limit)
	if err != nil {
		return err
	}
	out := make([]documentResponse, len(docs))
	for i := range docs {
		out[i] = documentOf(&docs[i])
	}
	return c.JSON(http.StatusOK, documentPage{Documents: out, NextCursor: next})
}

// documentPage is a page of GET /documents.
type documentPage struct {
	Documents []documentResponse `json:"documents"`
	// NextCursor, when set, is the cursor of the next page; the last page
	// has none.
	NextCursor string `json:"next_cursor,omitempty"`
}

func (s *Server) documentByExternalID(c echo.Context, owner, externalID string) error {
	if externalID == "" {
		return badRequest("external_id is empty: give the id the document was uploaded with")
	}
	if err := checkExternalID("external_id", externalID); err != nil {
		return err
	}
	out := []documentResponse{}
	d, err := s.store.DocumentByExternalID(owner, externalID)
	switch {
	case err == nil:
		out = append(out, documentOf(d))
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	return c.JSON(http.StatusOK, documentPage{Documents: out})
}

func (s *Server) getDocument(c echo.Context) error {
	d, err := s.documentOf(c, c.Param("document_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, documentOf(d))
}

func (s *Server) deleteDocument(c echo.Context) error {
	d, err := s.documentOf(c, c.Param("document_id"))
	if err != nil {
		return err
	}
	if err := s.engine.DeleteDocument(d); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound("document %s not found", d.ID)
		}
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"document_id": d.ID, "deleted": true})
}
