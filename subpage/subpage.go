// Package subpage makes subpages: a PDF document's run of pages around a
// chunk, sliced into a PDF of their own and kept for a time behind a URL
// that is its own capability. It chooses the pages, shares one slice
// between every request naming the same pages, keeps each project and
// owner within their limits, bounds the slices made at once, and stores
// the result; server only parses the request, calls Create and words its
// errors. Serving a subpage's file is the store's and server's.
package subpage

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
)

// MaxSlices bounds the subpages sliced at once; more requests wait their
// turn. A slice reads its whole PDF into memory first (pdfcpu): 210 MB
// for a document of 20,000 pages, 1.1 GB for one of 100,000 (54 MB, under
// the upload limit), and twenty at once took a server to 4.9 GB.
const MaxSlices = 2

// Store is what making subpages needs of the store.
type Store interface {
	Chunk(id string) (*store.Chunk, error)
	Document(id string) (*store.Document, error)
	ReadOriginal(d *store.Document) ([]byte, error)
	SubpageFor(documentID string, first, last int) (*store.Subpage, error)
	SubpageUsage(projectID, ownerID string) (store.SubpageUsage, error)
	CreateSubpage(sp store.Subpage, data []byte, ttl time.Duration, limits store.SubpageLimits) (*store.Subpage, error)
	ExtendSubpage(id string, ttl time.Duration) (*store.Subpage, error)
	Now() time.Time
}

// Config is how long subpages live and how many each project and owner
// may keep.
type Config struct {
	TTL           time.Duration // a subpage's life from when it was last asked for
	OwnerBytes    int64         // bytes one owner's live subpages may take; 0: no limit
	MaxPerProject int           // live subpages one project may keep; 0: no limit

	// Slice slices pages first to last out of a PDF; nil: pdf.Slice.
	// Tests watch the slices through it.
	Slice func(data []byte, first, last int) ([]byte, error)
}

// Service makes subpages.
type Service struct {
	store Store
	cfg   Config
	slots chan struct{} // a place for each slice being made (MaxSlices)
}

// New returns a service making subpages in st.
func New(st Store, cfg Config) *Service {
	if cfg.Slice == nil {
		cfg.Slice = pdf.Slice
	}
	return &Service{store: st, cfg: cfg, slots: make(chan struct{}, MaxSlices)}
}

// Request asks for the pages of a chunk's document around its page.
type Request struct {
	ProjectID, OwnerID string // the owner (a project or a customer) of the chunk
	ChunkID            string
	Varience           int // pages either side of the chunk's, spelled as in the interface spec
}

// ErrNotFound is a chunk that is not the owner's, or that (or whose
// document) is gone, including deleted while its subpage was made.
var ErrNotFound = errors.New("chunk not found")

// ErrRaced is a subpage refused because others stored at the same time
// took the room left for it: worth asking again at once.
var ErrRaced = errors.New("subpages stored at the same time as this one took the room left for it")

// NotPDFError is a chunk whose document is not a PDF, or has no pages.
type NotPDFError struct {
	ChunkID, DocumentID, Format string
}

func (e *NotPDFError) Error() string {
	return fmt.Sprintf("chunk %s is not from a PDF (its document %s is %s); subpages can only be sliced from PDFs", e.ChunkID, e.DocumentID, e.Format)
}

// DamagedError is a PDF whose text could be read (MuPDF repairs more) but
// whose pages cannot be sliced out of it into a new PDF (pdfcpu).
type DamagedError struct {
	DocumentID  string
	First, Last int
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("document %s is a damaged PDF: its text could be read, but pages %d-%d cannot be sliced from it into a new PDF", e.DocumentID, e.First, e.Last)
}

// FullError refuses a subpage over a limit: its project keeps as many
// live subpages as it may (Err is store.ErrSubpageQuota), or its owner's
// take its budget (store.ErrSubpageBudget). Size is the refused subpage's,
// 0 when it was refused before it was sliced; Freed is when the first of
// the subpages in the way expires (zero when none will).
type FullError struct {
	Err                error
	ProjectID, OwnerID string
	Usage              store.SubpageUsage
	Limits             store.SubpageLimits
	Size               int64
	Freed              time.Time
}

func (e *FullError) Error() string { return "subpage: " + e.Err.Error() }
func (e *FullError) Unwrap() error { return e.Err }

// Limits are the limits the service keeps subpages within.
func (s *Service) Limits() store.SubpageLimits {
	return store.SubpageLimits{OwnerBytes: s.cfg.OwnerBytes, ProjectSubpages: s.cfg.MaxPerProject}
}

// TTL is how long a subpage lives from when it was last asked for.
func (s *Service) TTL() time.Duration { return s.cfg.TTL }

// Create returns the subpage of r's pages, [page−varience,
// page+varience] clamped to the document: the live one of the same
// pages when there is one (extended, see reuse), else a new slice,
// refused with a *FullError while the owner's or project's live subpages
// are at their limits, checked before the slice and again in the store's
// transaction that keeps it.
func (s *Service) Create(ctx context.Context, r Request) (*store.Subpage, error) {
	chunk, err := s.store.Chunk(r.ChunkID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && chunk.OwnerID != r.OwnerID) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	doc, err := s.store.Document(chunk.DocumentID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if doc.Format != string(pdf.FormatPDF) || chunk.Page == 0 {
		return nil, &NotPDFError{ChunkID: chunk.ID, DocumentID: doc.ID, Format: doc.Format}
	}
	// A subpage is its document's pages: every chunk and varience that
	// name the same pages share one slice.
	first, last := max(chunk.Page-r.Varience, 1), chunk.Page+r.Varience
	if doc.Pages > 0 {
		last = min(last, doc.Pages)
		if sp, ok := s.reuse(doc.ID, first, last); ok {
			return sp, nil
		}
	}
	// Refused before the slice, so that an owner over its budget does
	// not hold the slices' places meanwhile.
	if err := s.room(r.ProjectID, r.OwnerID, 0); err != nil {
		return nil, err
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	data, err := s.store.ReadOriginal(doc)
	if errors.Is(err, store.ErrNotFound) {
		if _, gone := s.store.Document(doc.ID); errors.Is(gone, store.ErrNotFound) {
			return nil, ErrNotFound // deleted meanwhile
		}
	}
	if err != nil {
		return nil, err
	}
	if doc.Pages == 0 { // documents indexed before page counts were kept
		if n := pageCount(data); n > 0 {
			last = min(last, n)
		}
	}
	// A request for the same pages that went first may have sliced them.
	if sp, ok := s.reuse(doc.ID, first, last); ok {
		return sp, nil
	}
	sliced, err := s.cfg.Slice(data, first, last)
	switch {
	case errors.Is(err, pdf.ErrCorrupt):
		return nil, &DamagedError{DocumentID: doc.ID, First: first, Last: last}
	case err != nil:
		return nil, fmt.Errorf("subpage: slice %s: %w", chunk.ID, err)
	}
	if doc.Pages == 0 {
		last = min(last, first+pageCount(sliced)-1)
	}
	sp, err := s.store.CreateSubpage(store.Subpage{
		ID: store.NewSubpageID(), ProjectID: r.ProjectID, OwnerID: r.OwnerID, DocumentID: doc.ID,
		FirstPage: first, LastPage: last, FileName: FileName(doc.Name, first, last),
	}, sliced, s.cfg.TTL, s.Limits())
	switch {
	case errors.Is(err, store.ErrNotFound): // its document was deleted while it was sliced
		return nil, ErrNotFound
	case errors.Is(err, store.ErrSubpageBudget), errors.Is(err, store.ErrSubpageQuota):
		// Others were stored meanwhile; say which limit, if one still is.
		if refused := s.room(r.ProjectID, r.OwnerID, int64(len(sliced))); refused != nil {
			return nil, refused
		}
		return nil, ErrRaced
	case err != nil:
		return nil, err
	}
	return sp, nil
}

// room is nil when a subpage of size more bytes (0: not sliced yet, so of
// at least one) fits in the project's and the owner's limits, and
// otherwise a *FullError.
func (s *Service) room(projectID, owner string, size int64) error {
	u, err := s.store.SubpageUsage(projectID, owner)
	if err != nil {
		return err
	}
	err = u.Check(s.Limits(), max(size, 1))
	if err == nil {
		return nil
	}
	full := &FullError{Err: err, ProjectID: projectID, OwnerID: owner, Usage: u, Limits: s.Limits(), Size: size, Freed: u.NextOwnerExpiry}
	if errors.Is(err, store.ErrSubpageQuota) {
		full.Freed = u.NextProjectExpiry
	}
	return full
}

// reuse returns the live subpage of a document's pages, if there is one,
// extended to last the full time to live when less than half of it is
// left: a URL handed out must not die a minute later.
func (s *Service) reuse(documentID string, first, last int) (*store.Subpage, bool) {
	sp, err := s.store.SubpageFor(documentID, first, last)
	if err != nil {
		return nil, false
	}
	if sp.ExpiresAt.Sub(s.store.Now()) >= s.cfg.TTL/2 {
		return sp, true
	}
	sp, err = s.store.ExtendSubpage(sp.ID, s.cfg.TTL)
	return sp, err == nil
}

func pageCount(data []byte) int {
	n, err := pdf.PageCount(data)
	if err != nil {
		return 0
	}
	return n
}

// FileName names the download after its document and pages, keeping its
// letters and digits, in any script, and - _ . (others become _): safe
// in any file system, and in the header as RFC 2231 encodes it.
func FileName(docName string, first, last int) string {
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
