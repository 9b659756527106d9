package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/subpage"
	"github.com/labstack/echo/v4"
)

// maxVarience bounds the pages either side of a subpage's centre: 50 makes
// a 101-page "subpage", already more than a reader wants.
const maxVarience = 50

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
	sp, err := s.subpages.Create(c.Request().Context(), subpage.Request{
		ProjectID: project(c).ID, OwnerID: owner, ChunkID: req.ChunkID, Varience: int(v),
	})
	var notPDF *subpage.NotPDFError
	var damaged *subpage.DamagedError
	var full *subpage.FullError
	switch {
	case errors.Is(err, subpage.ErrNotFound):
		return notFound("chunk %s not found", clip.String(req.ChunkID))
	case errors.As(err, &notPDF):
		return badRequest("%s", notPDF.Error())
	case errors.As(err, &damaged):
		return errorf(http.StatusUnprocessableEntity, "%s", damaged.Error())
	case errors.As(err, &full):
		return s.subpagesFull(c, full)
	case errors.Is(err, subpage.ErrRaced):
		c.Response().Header().Set("Retry-After", "1")
		return errorf(http.StatusTooManyRequests, "%s: try again", subpage.ErrRaced.Error())
	case err != nil:
		return err
	}
	return c.JSON(http.StatusOK, s.subpageResponse(sp))
}

// subpagesFull words a subpage refused over a limit as a 429, not a 507:
// the server's disk is not full (that is the 507 the operator must hear
// of), this owner has used its share, and waiting is the cure, since
// subpages expire; Retry-After says when the first of them does.
func (s *Server) subpagesFull(c echo.Context, full *subpage.FullError) error {
	var msg string
	if errors.Is(full, store.ErrSubpageQuota) {
		msg = fmt.Sprintf("project %s keeps %d live subpages, as many as a project may keep", full.ProjectID, full.Usage.ProjectSubpages)
	} else {
		msg = fmt.Sprintf("the live subpages of owner %s take %s of its subpage budget of %s", full.OwnerID, humanBytes(full.Usage.OwnerBytes), humanBytes(full.Limits.OwnerBytes))
		if full.Size > 0 {
			msg += fmt.Sprintf(", and this one would take %s more", humanBytes(full.Size))
		}
	}
	msg += fmt.Sprintf(": a subpage expires %s after it was last asked for, and frees its room", durationWords(s.subpages.TTL()))
	if !full.Freed.IsZero() {
		wait := max(full.Freed.Sub(s.store.Now()), time.Second)
		c.Response().Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		msg += "; the first of them expires at " + full.Freed.UTC().Format(time.RFC3339)
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

func (s *Server) subpageResponse(sp *store.Subpage) subpageResponse {
	return subpageResponse{
		SubpageURL: s.cfg.BaseURL + "/subpages/" + sp.ID + ".pdf",
		FirstPage:  sp.FirstPage, LastPage: sp.LastPage,
		ExpiresAt: sp.ExpiresAt.Format("2006-01-02T15:04:05Z07:00"),
	}
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
	// a buffer, not the file, and a reader that stops reading is dropped by
	// the connection's write stall (see conns.go).
	http.ServeContent(c.Response(), c.Request(), "", sp.CreatedAt, f)
	return nil
}
