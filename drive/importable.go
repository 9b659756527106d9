package drive

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
)

// What can be imported from Drive into an upload session, judged from a
// file's type and reported size before anything is downloaded. The
// content's own type is checked again when it is submitted, as for any
// upload.

// ErrFolder is a folder chosen for import: its files are to be chosen.
var ErrFolder = errors.New("drive: this is a folder: open it and choose files")

// UnsupportedError is a file of a type docsift does not read; Reason says
// so in the words of docsift's 415s.
type UnsupportedError struct{ Reason string }

func (e *UnsupportedError) Error() string { return "drive: " + e.Reason }

// Importable is nil when f can be imported under a limit of limit bytes,
// and otherwise ErrFolder, an *UnsupportedError or a *TooLargeError.
func (f *File) Importable(limit int64) error {
	switch {
	case f.Folder():
		return ErrFolder
	case f.MimeType == ShortcutType:
		return &UnsupportedError{"shortcuts are not imported: open the folder of the file it points to and choose the file itself"}
	case f.GoogleFormat() && f.ExportType() == "":
		return &UnsupportedError{TypeLabel(f.MimeType) + " files cannot be imported; Google Docs, Sheets and Slides can"}
	case f.Size > limit:
		return &TooLargeError{Size: f.Size, Limit: limit}
	case f.GoogleFormat():
		return nil
	}
	if reason := typeRefusal(f.MimeType); reason != "" {
		return &UnsupportedError{reason}
	}
	return nil
}

// Fetch is the import of one file of the Drive that the grant under key
// reaches: its metadata, checked by Importable, and its content, which
// stops at limit bytes (a *TooLargeError of Size -1). The caller closes
// the content.
func (c *Client) Fetch(ctx context.Context, key, id string, limit int64) (*File, io.ReadCloser, error) {
	f, err := c.Stat(ctx, key, id)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Importable(limit); err != nil {
		return nil, nil, err
	}
	body, err := c.Download(ctx, key, f, limit)
	if err != nil {
		return nil, nil, err
	}
	return f, body, nil
}

// importTypes are the MIME types Drive gives the formats docsift reads
// (see pdf.Supported). Any text/ type is read as text too, and a file Drive
// could not type (application/octet-stream) is fetched and judged by its
// content, as an upload is.
var importTypes = []string{
	"application/pdf",
	"application/epub+zip",
	"application/vnd.ms-xpsdocument", "application/oxps",
	"application/x-fictionbook+xml", "application/x-fictionbook",
	"application/x-mobipocket-ebook",
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
	"application/vnd.openxmlformats-officedocument.presentationml.presentation",
	"application/xhtml+xml",
	"image/png", "image/jpeg", "image/tiff", // read through OCR
	"application/octet-stream",
}

// typeRefusal says why a file of mimeType is not imported, in the
// words of docsift's 415s, or "" when it is.
func typeRefusal(mimeType string) string {
	mt := strings.ToLower(mimeType)
	switch {
	case slices.Contains(importTypes, mt):
		return ""
	case mt == "text/rtf":
		return "RTF documents are not supported: save it as PDF or DOCX"
	case strings.HasPrefix(mt, "text/"):
		return ""
	case strings.HasPrefix(mt, "image/"):
		return "of images, only PNG, JPEG and TIFF are read (through OCR)"
	case strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"):
		return "audio and video are not documents"
	case mt == "application/msword", mt == "application/vnd.ms-excel", mt == "application/vnd.ms-powerpoint":
		return "legacy Microsoft Office files (.doc/.xls/.ppt) are not supported: save it as PDF or DOCX"
	case strings.HasPrefix(mt, "application/vnd.oasis.opendocument."):
		return "OpenDocument files are not supported: save it as PDF or DOCX"
	case mt == "application/rtf":
		return "RTF documents are not supported: save it as PDF or DOCX"
	case mt == "application/zip", mt == "application/x-zip-compressed", mt == "application/x-7z-compressed",
		mt == "application/x-rar-compressed", mt == "application/vnd.rar", mt == "application/gzip", mt == "application/x-tar":
		return "archives are not supported: import the files inside it"
	}
	return "files of type " + mimeType + " are not supported"
}

// typeLabels name the types the picker shows most.
var typeLabels = map[string]string{
	FolderType:                            "Folder",
	DocumentType:                          "Google Doc",
	SpreadsheetType:                       "Google Sheet",
	PresentationType:                      "Google Slides",
	ShortcutType:                          "Shortcut",
	"application/vnd.google-apps.form":    "Google Form",
	"application/vnd.google-apps.drawing": "Google Drawing",
	"application/vnd.google-apps.site":    "Google Site",
	"application/vnd.google-apps.map":     "Google My Maps",
	"application/pdf":                     "PDF",
	"application/epub+zip":                "EPUB",
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document":   "Word",
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet":         "Excel",
	"application/vnd.openxmlformats-officedocument.presentationml.presentation": "PowerPoint",
	"application/msword":            "Word (legacy .doc)",
	"application/vnd.ms-excel":      "Excel (legacy .xls)",
	"application/vnd.ms-powerpoint": "PowerPoint (legacy .ppt)",
	"text/plain":                    "Text",
	"text/markdown":                 "Markdown",
	"text/x-markdown":               "Markdown",
	"text/html":                     "HTML",
	"text/csv":                      "CSV",
}

// TypeLabel names a file's type for people: "Google Doc", "PDF", "Image".
func TypeLabel(mimeType string) string {
	if l, ok := typeLabels[strings.ToLower(mimeType)]; ok {
		return l
	}
	switch major, _, _ := strings.Cut(mimeType, "/"); major {
	case "image":
		return "Image"
	case "video":
		return "Video"
	case "audio":
		return "Audio"
	}
	if strings.HasPrefix(mimeType, "application/vnd.google-apps.") {
		return "Google " + strings.TrimPrefix(mimeType, "application/vnd.google-apps.")
	}
	return mimeType
}
