package drive

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	drivev3 "google.golang.org/api/drive/v3"
)

// Google's MIME types for what is not a file of bytes.
const (
	FolderType       = "application/vnd.google-apps.folder"
	ShortcutType     = "application/vnd.google-apps.shortcut"
	DocumentType     = "application/vnd.google-apps.document"
	SpreadsheetType  = "application/vnd.google-apps.spreadsheet"
	PresentationType = "application/vnd.google-apps.presentation"

	googleTypePrefix = "application/vnd.google-apps."

	// Export formats.
	pdfType  = "application/pdf"
	xlsxType = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
)

const (
	// pageSize is how many items one listing returns.
	pageSize = 100
	// listFields and fileFields ask Drive for what the picker shows and
	// the import needs, nothing more.
	listFields = "nextPageToken, files(id, name, mimeType, size, modifiedTime)"
	fileFields = "id, name, mimeType, size, modifiedTime, trashed"
	// maxIDLen bounds an id; Drive's are 28 to 44 characters.
	maxIDLen = 200
)

// exportTypes are the formats Google's own documents are fetched as: PDF
// keeps a Doc's or a deck's pages (and so page numbers in answers), XLSX
// keeps a sheet's cells as a table.
var exportTypes = map[string]string{
	DocumentType:     pdfType,
	PresentationType: pdfType,
	SpreadsheetType:  xlsxType,
}

// File is one item of a user's Drive.
type File struct {
	ID       string
	Name     string
	MimeType string
	// Size is in bytes; -1 for Google's own formats, which have no size
	// until exported.
	Size         int64
	ModifiedTime time.Time
}

// Folder reports whether f is a folder.
func (f *File) Folder() bool { return f.MimeType == FolderType }

// GoogleFormat reports whether f is one of Google's own formats (Docs,
// Sheets, folders, shortcuts, …), which hold no bytes of their own.
func (f *File) GoogleFormat() bool { return strings.HasPrefix(f.MimeType, googleTypePrefix) }

// ExportType is the MIME type f is fetched as: its export format for a
// Google Doc, Sheet or Slides, its own type for other files, and "" for
// what cannot be fetched (folders, Forms, Drawings, shortcuts, …).
func (f *File) ExportType() string {
	if !f.GoogleFormat() {
		return f.MimeType
	}
	return exportTypes[f.MimeType]
}

// Query chooses what List returns.
type Query struct {
	// Folder is the folder listed; "" is the root of My Drive.
	Folder string
	// Name, when set, lists the files whose name contains it, in every
	// folder, instead.
	Name string
	// PageToken continues a listing where the last page ended.
	PageToken string
}

// Listing is one page of a listing: folders first, then files, by name.
type Listing struct {
	Files         []File
	NextPageToken string // "" on the last page
}

// List lists key's Drive as q asks. Trashed items are left out.
func (c *Client) List(ctx context.Context, key string, q Query) (*Listing, error) {
	g, err := c.grantOf(key)
	if err != nil {
		return nil, err
	}
	var query string
	if q.Name != "" {
		query = fmt.Sprintf("name contains '%s' and trashed = false", quote(q.Name))
	} else {
		folder := q.Folder
		if folder == "" {
			folder = "root"
		}
		if !validID(folder) {
			return nil, ErrBadID
		}
		query = fmt.Sprintf("'%s' in parents and trashed = false", folder)
	}
	var res *drivev3.FileList
	err = c.call(ctx, g, func(ctx context.Context) (err error) {
		call := g.svc.Files.List().Q(query).Fields(listFields).PageSize(pageSize).
			OrderBy("folder,name").Spaces("drive").Context(ctx)
		if q.PageToken != "" {
			call = call.PageToken(q.PageToken)
		}
		res, err = call.Do()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("drive: list: %w", err)
	}
	l := &Listing{NextPageToken: res.NextPageToken, Files: make([]File, 0, len(res.Files))}
	for _, f := range res.Files {
		l.Files = append(l.Files, fileOf(f))
	}
	return l, nil
}

// Stat returns the file id of key's Drive. A trashed file is not found.
func (c *Client) Stat(ctx context.Context, key, id string) (*File, error) {
	g, err := c.grantOf(key)
	if err != nil {
		return nil, err
	}
	if !validID(id) {
		return nil, ErrBadID
	}
	var res *drivev3.File
	err = c.call(ctx, g, func(ctx context.Context) (err error) {
		res, err = g.svc.Files.Get(id).Fields(fileFields).Context(ctx).Do()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("drive: get %s: %w", id, err)
	}
	if res.Trashed {
		return nil, fmt.Errorf("drive: get %s: %w (in the trash)", id, ErrNotFound)
	}
	f := fileOf(res)
	return &f, nil
}

// Download opens f's content: the export of a Google Doc, Sheet or Slides,
// the bytes of any other file, to read as it arrives (the server spools it
// to disk, never holding it whole). A file whose reported size is over
// limit is refused before any download, and reading one that turns out
// larger (an export, a size that was wrong) fails past limit bytes: either
// way the error is a *TooLargeError. Other errors while reading wrap
// ErrUnavailable. The caller closes it.
func (c *Client) Download(ctx context.Context, key string, f *File, limit int64) (io.ReadCloser, error) {
	g, err := c.grantOf(key)
	if err != nil {
		return nil, err
	}
	export := f.ExportType()
	switch {
	case export == "":
		return nil, ErrNotImportable
	case f.Size > limit:
		return nil, &TooLargeError{Size: f.Size, Limit: limit}
	case !validID(f.ID):
		return nil, ErrBadID
	}
	var resp *http.Response
	err = c.call(ctx, g, func(ctx context.Context) (err error) {
		if f.GoogleFormat() {
			resp, err = g.svc.Files.Export(f.ID, export).Context(ctx).Download()
		} else {
			resp, err = g.svc.Files.Get(f.ID).Context(ctx).Download()
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("drive: download %s: %w", f.ID, err)
	}
	return &download{body: resp.Body, ctx: ctx, id: f.ID, left: limit, limit: limit}, nil
}

// download is a file's content as it arrives, stopped past its limit.
type download struct {
	body  io.ReadCloser
	ctx   context.Context
	id    string
	left  int64 // bytes it may still give
	limit int64
}

func (d *download) Read(p []byte) (int, error) {
	if int64(len(p)) > d.left+1 {
		p = p[:d.left+1]
	}
	n, err := d.body.Read(p)
	if d.left -= int64(n); d.left < 0 {
		return n, &TooLargeError{Size: -1, Limit: d.limit}
	}
	switch {
	case err == nil, err == io.EOF:
		return n, err
	case d.ctx.Err() != nil:
		return n, d.ctx.Err()
	}
	return n, fmt.Errorf("drive: download %s: %w: %w", d.id, ErrUnavailable, err)
}

func (d *download) Close() error { return d.body.Close() }

func fileOf(f *drivev3.File) File {
	out := File{ID: f.Id, Name: f.Name, MimeType: f.MimeType, Size: f.Size}
	if strings.HasPrefix(f.MimeType, googleTypePrefix) {
		out.Size = -1
	}
	if t, err := time.Parse(time.RFC3339, f.ModifiedTime); err == nil {
		out.ModifiedTime = t
	}
	return out
}

// quote escapes s for a '…' string in a Drive query.
func quote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s)
}

// validID reports whether id can be a Drive id (or the alias root). Ids
// go into query strings and paths, so anything else is refused rather
// than escaped.
func validID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
