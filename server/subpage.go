package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
	"github.com/labstack/echo/v4"
)

// maxVarience bounds the pages either side of a subpage's centre: 50 makes
// a 101-page "subpage", already more than a reader wants.
const maxVarience = 50

// maxCuts bounds the subpages cut at once; more requests wait their turn.
// A cut reads its whole PDF into memory first (pdfcpu): 210 MB for a
// document of 20,000 pages, 1.1 GB for one of 100,000 (54 MB, under the
// upload limit), and twenty at once took a server to 4.9 GB.
const maxCuts = 2

// slicePDF cuts pages out of a PDF; tests watch the cuts through it.
var slicePDF = pdf.Slice

type subpageRequest struct {
	ChunkID  string   `json:"chunk_id"`
	OwnerID  string   `json:"owner_id"`
	Varience *float64 `json:"varience"` // spelled as in the interface spec
	// Variance is taken only to say how the field is spelled.
	Variance json.RawMessage `json:"variance"`
}

type subpageResponse struct {
	SubpageURL string `json:"subpage_url"`
	FirstPage  int    `json:"first_page"`
	LastPage   int    `json:"last_page"`
	ExpiresAt  string `json:"expires_at"`
}

func (s *Server) createSubpage(c echo.Context) error {
	var req subpageRequest
	if err := decodeJSON(c, maxJSONBytes, &req); err != nil {
		return err
	}
	if req.Variance != nil {
		return badRequest("unknown field \"variance\": the interface spells it \"varience\"")
	}
	if req.ChunkID == "" {
		return badRequest("chunk_id is required")
	}
	owner, err := s.ownerOf(c, req.OwnerID)
	if err != nil {
		return err
	}
	if req.Varience == nil {
		return badRequest("varience is required: the number of pages to include before and after the chunk's page (0–%d)", maxVarience)
	}
	v := *req.Varience
	if v != math.Trunc(v) || v < 0 || v > maxVarience {
		return badRequest("varience must be a whole number from 0 to %d, got %v", maxVarience, v)
	}
	varience := int(v)

	chunk, err := s.store.Chunk(req.ChunkID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && chunk.OwnerID != owner) {
		return notFound("chunk %s not found", clip.String(req.ChunkID))
	}
	if err != nil {
		return err
	}
	doc, err := s.store.Document(chunk.DocumentID)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("chunk %s not found", clip.String(req.ChunkID))
	}
	if err != nil {
		return err
	}
	if doc.Format != string(pdf.FormatPDF) || chunk.Page == 0 {
		return badRequest("chunk %s is not from a PDF (its document %s is %s); subpages can only be cut from PDFs", chunk.ID, doc.ID, doc.Format)
	}
	// A subpage is its document's pages: every chunk and varience that
	// name the same pages share one cut.
	first, last := max(chunk.Page-varience, 1), chunk.Page+varience
	if doc.Pages > 0 {
		last = min(last, doc.Pages)
		if sp, ok := s.reuseSubpage(doc.ID, first, last); ok {
			return c.JSON(http.StatusOK, s.subpageResponse(sp))
		}
	}
	// Refused before the cut, so that an owner over its budget does not
	// hold the cuts' places meanwhile.
	projectID := project(c).ID
	if err := s.subpageRoom(c, projectID, owner, 0); err != nil {
		return err
	}
	select {
	case s.cuts <- struct{}{}:
		defer func() { <-s.cuts }()
	case <-c.Request().Context().Done():
		return c.Request().Context().Err()
	}
	data, err := s.store.ReadOriginal(doc)
	if errors.Is(err, store.ErrNotFound) {
		if _, gone := s.store.Document(doc.ID); errors.Is(gone, store.ErrNotFound) {
			return notFound("chunk %s not found", clip.String(req.ChunkID)) // deleted meanwhile
		}
	}
	if err != nil {
		return err
	}
	if doc.Pages == 0 { // documents indexed before page counts were kept
		if n := pageCount(data); n > 0 {
			last = min(last, n)
		}
	}
	// A request for the same pages that went first may have cut them.
	if sp, ok := s.reuseSubpage(doc.ID, first, last); ok {
		return c.JSON(http.StatusOK, s.subpageResponse(sp))
	}
	sliced, err := slicePDF(data, first, last)
	switch {
	case errors.Is(err, pdf.ErrCorrupt):
		// MuPDF, which read the document, repairs more than pdfcpu, which
		// cuts it, can.
		return errorf(http.StatusUnprocessableEntity, "document %s is a damaged PDF: its text could be read, but pages %d-%d cannot be cut from it into a new PDF", doc.ID, first, last)
	case err != nil:
		return fmt.Errorf("server: cut subpage of %s: %w", chunk.ID, err)
	}
	if doc.Pages == 0 {
		last = min(last, first+pageCount(sliced)-1)
	}
	sp, err := s.store.CreateSubpage(store.Subpage{
		ID: store.NewSubpageID(), ProjectID: projectID, OwnerID: owner, DocumentID: doc.ID,
		FirstPage: first, LastPage: last, FileName: subpageFileName(doc.Name, first, last),
	}, sliced, s.cfg.SubpageTTL, s.subpageLimits())
	switch {
	case errors.Is(err, store.ErrNotFound): // its document was deleted while it was cut
		return notFound("chunk %s not found", clip.String(req.ChunkID))
	case errors.Is(err, store.ErrSubpageBudget), errors.Is(err, store.ErrSubpageQuota):
		// Others were stored meanwhile; say which limit, if one still is.
		if refused := s.subpageRoom(c, projectID, owner, int64(len(sliced))); refused != nil {
			return refused
		}
		c.Response().Header().Set("Retry-After", "1")
		return errorf(http.StatusTooManyRequests, "subpages stored at the same time as this one took the room left for it: try again")
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, s.subpageResponse(sp))
}

func (s *Server) subpageLimits() store.SubpageLimits {
	return store.SubpageLimits{OwnerBytes: s.cfg.SubpageBudget, ProjectSubpages: s.cfg.MaxSubpagesPerProject}
}

// subpageRoom is nil when a subpage of size more bytes (0: not cut yet,
// so of at least one) fits in the project's and the owner's limits, and
// otherwise their 429. A 429, not a 507: the server's disk is not full
// (that is the 507 the operator must hear of), this owner has used its
// share, and waiting is the cure, since subpages expire; Retry-After
// says when the first of them does.
func (s *Server) subpageRoom(c echo.Context, projectID, owner string, size int64) error {
	u, err := s.store.SubpageUsage(projectID, owner)
	if err != nil {
		return err
	}
	var msg string
	var freed time.Time
	switch err := u.Check(s.subpageLimits(), max(size, 1)); {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrSubpageQuota):
		msg = fmt.Sprintf("project %s keeps %d live subpages, as many as a project may keep", projectID, u.ProjectSubpages)
		freed = u.NextProjectExpiry
	default:
		msg = fmt.Sprintf("the live subpages of owner %s take %s of its subpage budget of %s", owner, humanBytes(u.OwnerBytes), humanBytes(s.cfg.SubpageBudget))
		if size > 0 {
			msg += fmt.Sprintf(", and this one would take %s more", humanBytes(size))
		}
		freed = u.NextOwnerExpiry
	}
	msg += fmt.Sprintf(": a subpage expires %s after it was last asked for, and frees its room", durationWords(s.cfg.SubpageTTL))
	if !freed.IsZero() {
		wait := max(freed.Sub(s.store.Now()), time.Second)
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		msg += "; the first of them expires at " + freed.UTC().Format(time.RFC3339)
	}
	return errorf(http.StatusTooManyRequests, "%s", msg)
}

// durationWords writes a duration as people do when it is a whole number
// of hours or minutes ("24 hours"), and as Go does otherwise ("90s").
func durationWords(d time.Duration) string {
	n, unit := 0, ""
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		n, unit = int(d/time.Hour), "hour"
	case d >= time.Minute && d%time.Minute == 0:
		n, unit = int(d/time.Minute), "minute"
	default:
		return d.String()
	}
	if n != 1 {
		unit += "s"
	}
	return fmt.Sprintf("%d %s", n, unit)
}

// reuseSubpage returns the live subpage of a document's pages, if there
// is one, extended to last the full time to live when less than half of
// it is left: a URL handed out must not die a minute later.
func (s *Server) reuseSubpage(documentID string, first, last int) (*store.Subpage, bool) {
	sp, err := s.store.SubpageFor(documentID, first, last)
	if err != nil {
		return nil, false
	}
	if sp.ExpiresAt.Sub(s.store.Now()) >= s.cfg.SubpageTTL/2 {
		return sp, true
	}
	sp, err = s.store.ExtendSubpage(sp.ID, s.cfg.SubpageTTL)
	return sp, err == nil
}

func pageCount(data []byte) int {
	n, err := pdf.PageCount(data)
	if err != nil {
		return 0
	}
	return n
}

func (s *Server) subpageResponse(sp *store.Subpage) subpageResponse {
	return subpageResponse{
		SubpageURL: s.cfg.BaseURL + "/subpages/" + sp.ID + ".pdf",
		FirstPage:  sp.FirstPage, LastPage: sp.LastPage,
		ExpiresAt: sp.ExpiresAt.Format("2006-01-02T15:04:05Z07:00"),
	}
}

// subpageFileName names the download after its document and pages, keeping
// its letters and digits, in any script, and - _ . (others become _): safe
// in any file system, and in the header as RFC 2231 encodes it.
func subpageFileName(docName string, first, last int) string {
	base := docName
	if ext := filepath.Ext(base); strings.EqualFold(ext, ".pdf") {
		base = strings.TrimSuffix(base, ext)
	}
	base = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) {
			return r
		}
		return '_'
	}, base)
	if runes := []rune(base); len(runes) > 80 {
		base = string(runes[:80])
	}
	base = strings.Trim(base, "_")
	if base == "" {
		base = "document"
	}
	return fmt.Sprintf("%s-pages-%d-%d.pdf", base, first, last)
}

// subpageMaxCache is the longest a client may cache a subpage file.
const subpageMaxCache = time.Hour

// serveSubpage serves a subpage PDF to whoever holds its URL: the id is the
// credential, as with a session URL, so no bearer key is asked for.
func (s *Server) serveSubpage(c echo.Context) error {
	id, ok := strings.CutSuffix(c.Param("file"), ".pdf")
	if !ok || !strings.HasPrefix(id, store.PrefixSubpage) {
		return notFound("subpage not found")
	}
	sp, err := s.store.Subpage(id)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("subpage not found")
	}
	if err != nil {
		return err
	}
	if sp.Expired(s.store.Now()) {
		return errorf(http.StatusGone, "this subpage expired at %s: create it again with POST /subpage", sp.ExpiresAt.Format("2006-01-02 15:04 MST"))
	}
	f, err := s.store.OpenSubpage(sp.ID)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("subpage not found")
	}
	if err != nil {
		return err
	}
	defer f.Close()
	h := c.Response().Header()
	h.Set("Content-Type", "application/pdf")
	h.Set("Content-Disposition", mime.FormatMediaType("inline", map[string]string{"filename": sp.FileName}))
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	// A cache may keep the file for an hour at most, and never past the
	// URL's own expiry: after that the URL must answer 410, not a copy.
	maxAge := min(subpageMaxCache, sp.ExpiresAt.Sub(s.store.Now()))
	h.Set("Cache-Control", fmt.Sprintf("private, max-age=%d", int(maxAge/time.Second)))
	// ServeContent answers ranges, which PDF viewers ask for, and sends
	// the length. It copies the file a piece at a time: a download holds
	// a buffer, not the file, and a reader that stops reading is cut by
	// the connection's write stall (see conns.go).
	http.ServeContent(c.Response(), c.Request(), "", sp.CreatedAt, f)
	return nil
}
