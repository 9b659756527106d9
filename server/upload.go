package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/docsift/docsift/ingest"
	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/store"
	"github.com/labstack/echo/v4"
)

// Metadata limits: metadata is for the caller's own labels (a source URL, a
// department), not a second document.
const (
	maxMetadataKeys  = 64
	maxMetadataBytes = 16 << 10
)

type uploadResponse struct {
	JobID      string `json:"job_id"`
	Status     string `json:"status"`
	DocumentID string `json:"document_id"`
}

// uploadData is the JSON of /upload/text and of the data part of
// /upload/file.
type uploadData struct {
	OwnerID  string         `json:"owner_id"`
	Text     *string        `json:"text,omitempty"`
	Name     string         `json:"name"`
	Metadata metadataValues `json:"metadata"`
	// ExternalID is the caller's id for the document: uploading again
	// with it replaces the document once the new upload is indexed.
	ExternalID string `json:"external_id"`
}

func (s *Server) uploadText(c echo.Context) error {
	// Before the body: an upload over a quota is refused unread.
	if err := s.projectRoom(c, project(c).ID, store.ProjectUsage{Documents: 1}); err != nil {
		return err
	}
	var req uploadData
	// The text limit is on the text; the body may be a little larger for
	// JSON escaping and the other fields.
	if err := decodeJSON(c, 2*s.cfg.MaxTextBytes+maxMetadataBytes+4096, &req); err != nil {
		return err
	}
	if req.Text == nil {
		return badRequest("text is required")
	}
	if int64(len(*req.Text)) > s.cfg.MaxTextBytes {
		return errorf(http.StatusRequestEntityTooLarge, "text is %s", overLimit(int64(len(*req.Text)), s.cfg.MaxTextBytes))
	}
	if strings.ContainsRune(*req.Text, 0) {
		// Text with NUL bytes is binary data sent as text; it would only
		// fail later in its job, after a 200.
		return badRequest("text contains NUL characters, so it is not text: send files with /upload/file")
	}
	// Text is text, whatever its first bytes look like ("%PDF-1.4 is…")
	// and whatever control characters it holds, which indexing drops.
	text := pdf.DropStrayControls(*req.Text)
	if strings.TrimSpace(text) == "" {
		return badRequest("text is empty")
	}
	if err := checkCallerMetadata(req.Metadata); err != nil {
		return err
	}
	return s.submit(c, req, "text", store.Bytes([]byte(text)), pdf.TextFormat(text))
}

func (s *Server) uploadFile(c echo.Context) error {
	if err := s.projectRoom(c, project(c).ID, store.ProjectUsage{Documents: 1}); err != nil {
		return err
	}
	u, err := s.readMultipart(c, true)
	if err != nil {
		return err
	}
	defer u.file.Close()
	if u.data == nil {
		return badRequest(`the data part is missing: send a part named data holding {"owner_id": "..."}`)
	}
	if err := checkCallerMetadata(u.data.Metadata); err != nil {
		return err
	}
	return s.submit(c, *u.data, uploadName(u.fileName), u.file, "")
}

// formNameEscapes undoes what browsers do to a file's name in a form: the
// HTML standard has them write ", CR and LF as %22, %0D and %0A.
var formNameEscapes = strings.NewReplacer("%22", `"`, "%0D", "\r", "%0A", "\n")

// multipartUpload is what a multipart upload body held: the file spooled
// to disk (the caller closes it), and the data part.
type multipartUpload struct {
	file     *store.Original
	fileName string
	data     *uploadData // nil when there was no data part
}

// readMultipart reads a multipart body with one part named file, within the
// file size limit, and, when withData is set, an optional part named data
// holding the upload's JSON. Any other part is refused, so a misnamed part
// is an error rather than silently ignored. The file is spooled to disk as
// it arrives, never held in memory whole.
func (s *Server) readMultipart(c echo.Context, withData bool) (_ *multipartUpload, err error) {
	want := "a file part"
	if withData {
		want = "a file part and a data part"
	}
	req := c.Request()
	mediaType, params, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
	if err != nil || mediaType != echo.MIMEMultipartForm || params["boundary"] == "" {
		return nil, errorf(http.StatusUnsupportedMediaType, "the request body must be multipart/form-data with %s", want)
	}
	req.Body = http.MaxBytesReader(c.Response(), req.Body, s.cfg.MaxFileBytes+multipartOverhead)
	mr, err := req.MultipartReader()
	if err != nil {
		return nil, badRequest("the multipart body could not be read: %s", clip.String(err.Error()))
	}
	u := &multipartUpload{}
	defer func() {
		if err != nil && u.file != nil {
			u.file.Close()
		}
	}()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, s.multipartError(err)
		}
		switch {
		case part.FormName() == "file":
			if u.file != nil {
				return nil, badRequest("the body holds more than one file part: send one file per request")
			}
			u.fileName = formNameEscapes.Replace(part.FileName())
			body := &bodyReader{r: part}
			u.file, err = store.Spool(s.cfg.SpoolDir, body, s.cfg.MaxFileBytes)
			switch {
			case errors.Is(err, store.ErrOriginalTooLarge):
				return nil, errorf(http.StatusRequestEntityTooLarge, "the file is over the limit of %s", humanBytes(s.cfg.MaxFileBytes))
			case body.err != nil && body.err != io.EOF:
				return nil, s.multipartError(body.err)
			case err != nil:
				return nil, err // the spool's, not the client's: a 500 (or 507 for a full disk)
			}
		case part.FormName() == "data" && withData:
			if u.data != nil {
				return nil, badRequest("the body holds more than one data part: send one")
			}
			if err := reserveBody(c, maxJSONBytes); err != nil {
				return nil, err
			}
			raw, err := io.ReadAll(io.LimitReader(part, maxJSONBytes+1))
			if err != nil {
				return nil, s.multipartError(err)
			}
			if u.data, err = parseDataPart(raw); err != nil {
				return nil, err
			}
		default:
			return nil, badRequest("unknown part %s in the multipart body: send %s", clip.Quote(part.FormName()), want)
		}
	}
	switch {
	case u.file == nil:
		return nil, badRequest("the file part is missing")
	case u.file.Size() == 0:
		return nil, badRequest("the file is empty")
	}
	return u, nil
}

// bodyReader keeps the error reading a request body ended with: a failed
// spool is the client's doing when reading its body failed, the server's
// when writing the file did.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil {
		b.err = err
	}
	return n, err
}

func (s *Server) multipartError(err error) error {
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return errorf(http.StatusRequestEntityTooLarge, "the file is over the limit of %s", humanBytes(s.cfg.MaxFileBytes))
	case errors.Is(err, errBodyTooSlow):
		return errTooSlow
	}
	return badRequest("the multipart body could not be read: %s", clip.String(err.Error()))
}

// parseDataPart decodes the data part with the same strictness as a JSON body.
func parseDataPart(raw []byte) (*uploadData, error) {
	if len(raw) > maxJSONBytes {
		return nil, errorf(http.StatusRequestEntityTooLarge, "the data part is over the limit of %s", humanBytes(maxJSONBytes))
	}
	if err := checkUTF8("data part", raw); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var d uploadData
	if err := dec.Decode(&d); err != nil {
		return nil, jsonError("data part", &d, err)
	}
	if _, extra := dec.Token(); extra != io.EOF {
		return nil, badRequest("data part: must hold exactly one JSON object")
	}
	if d.Text != nil {
		return nil, badRequest("data part: unknown field \"text\" (send text with /upload/text)")
	}
	return &d, nil
}

// submit validates the owner, name and metadata and hands the upload to the
// pipeline. A name that is empty once trimmed is defaultName; an empty
// format is detected from the content.
func (s *Server) submit(c echo.Context, req uploadData, defaultName string, content *store.Original, format pdf.Format) error {
	owner, err := s.ownerOf(c, req.OwnerID)
	if err != nil {
		return err
	}
	if req.Name = strings.TrimSpace(req.Name); req.Name == "" {
		req.Name = defaultName
	}
	if err := checkName("name", req.Name, false); err != nil {
		return err
	}
	if err := checkMetadata(req.Metadata); err != nil {
		return err
	}
	if err := checkExternalID("external_id", req.ExternalID); err != nil {
		return err
	}
	projectID := project(c).ID
	job, _, err := s.engine.Submit(ingest.Upload{
		ProjectID: projectID, OwnerID: owner, Name: req.Name, Metadata: req.Metadata, Original: content, Format: format,
		ExternalID: req.ExternalID, Limits: s.projectLimits(),
	})
	switch {
	case errors.Is(err, pdf.ErrUnsupported):
		// The message names what was found and lists what is supported.
		return errorf(http.StatusUnsupportedMediaType, "%v", err)
	case errors.Is(err, pdf.ErrEmpty):
		return badRequest("the file is empty")
	case errors.Is(err, pdf.ErrTooLarge):
		// The message names the limit (a zip archive of too many files).
		return errorf(http.StatusRequestEntityTooLarge, "%s", strings.TrimPrefix(err.Error(), "pdf: "))
	case errors.Is(err, pdf.ErrCorrupt):
		return badRequest("%v", pdf.ErrCorrupt)
	case err != nil:
		return s.overQuota(c, err, projectID, store.ProjectUsage{Documents: 1, StoredBytes: content.Size()})
	}
	return c.JSON(http.StatusOK, uploadResponse{JobID: job.ID, Status: store.StatusPending, DocumentID: job.DocumentID})
}
