package server

// The JSON endpoints of an upload session's hosted page: /s/{token}/upload
// and /s/{token}/jobs. The session's token stands in for an API key and
// reaches its one owner's uploads, nothing else.

import (
	"errors"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/docsift/docsift/store"
	"github.com/labstack/echo/v4"
)

// liveSession returns the session of the request's token if it can still
// be used.
func (s *Server) liveSession(c echo.Context) (*store.Session, error) {
	token := c.Param("token")
	if token == "" || len(token) > 128 {
		return nil, errSessionUnknown
	}
	sess, err := s.store.SessionByToken(token)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, errSessionUnknown
	case err != nil:
		return nil, err
	}
	if err := ended(sess, s.store.Now()); err != nil {
		return nil, err
	}
	if err := s.sessionLimit.check(c, sess.ID); err != nil {
		return nil, err
	}
	return sess, nil
}

// ended says why sess can no longer be used at now (errSessionClosed,
// errSessionRevoked, errSessionExpired), or nil while it can.
func ended(sess *store.Session, now time.Time) error {
	switch {
	case !sess.Expired(now):
		return nil
	case sess.Closed == store.SessionRevoked:
		return errSessionRevoked
	case sess.Closed != "":
		return errSessionClosed
	}
	return errSessionExpired
}

// endedNotice is the page of a session that ended (ended's error).
func endedNotice(c echo.Context, err error) error {
	switch {
	case errors.Is(err, errSessionClosed):
		return renderNotice(c, http.StatusGone, "Upload link closed", msgSessionClosed)
	case errors.Is(err, errSessionRevoked):
		return renderNotice(c, http.StatusGone, "Upload link withdrawn", msgSessionRevoked)
	}
	return renderNotice(c, http.StatusGone, "Upload link expired", msgSessionExpired)
}

// sessionClose ends a session as its end user leaves the page by Done or
// Cancel (?how=done or ?how=cancel, which the page sends as it goes): the
// link opens nothing more, though its time has not run out, and the files
// sent through it stay.
func (s *Server) sessionClose(c echo.Context) error {
	how := map[string]string{"done": store.SessionDone, "cancel": store.SessionCancelled}[c.QueryParam("how")]
	if how == "" {
		return badRequest("how must be done or cancel")
	}
	sess, err := s.liveSession(c)
	if err != nil {
		return err
	}
	if _, err := s.store.CloseSession(c.Param("token"), how); err != nil {
		return err
	}
	// The user's Google grant ends with the session (the page asks as
	// well, but its request may come second and find the session closed).
	if s.cfg.Drive != nil {
		if err := s.cfg.Drive.Disconnect(c.Request().Context(), sess.ID); err != nil {
			s.log.Warn("revoking a Google Drive grant failed; it ends at Google when its tokens expire", "request_id", requestID(c), "session_id", sess.ID, "err", err)
		}
	}
	return c.NoContent(http.StatusNoContent)
}

// sessionServices says what a session's page offers: file upload for "all"
// and "file_upload"; Drive import for "all" and "google_drive" when a
// Google OAuth client is configured (driveOn). driveNote is set when the
// session asked for google_drive and this server cannot offer it, so the
// page says why there is no picker.
func sessionServices(sess *store.Session, driveOn bool) (upload, drive, driveNote bool) {
	upload = slices.Contains(sess.Services, serviceAll) || slices.Contains(sess.Services, serviceFileUpload)
	drive = driveOn && sessionOffersDrive(sess)
	driveNote = !driveOn && slices.Contains(sess.Services, serviceGoogleDrive)
	return upload, drive, driveNote
}

// sessionUpload takes one file for the session's owner. The owner and the
// project come from the session, never from the request: the multipart body
// holds a file part and nothing else. It goes through the same submit path,
// limits and errors as POST /upload/file.
func (s *Server) sessionUpload(c echo.Context) error {
	sess, err := s.liveSession(c)
	if err != nil {
		return err
	}
	if upload, _, _ := sessionServices(sess, s.cfg.Drive != nil); !upload {
		return errorf(http.StatusForbidden, "this upload link does not allow file uploads")
	}
	release, err := s.reserveSessionUpload(c, sess)
	if err != nil {
		return err
	}
	defer release()
	if err := s.projectRoom(c, sess.ProjectID, store.ProjectUsage{Documents: 1}); err != nil {
		return err
	}
	proj, err := s.store.Project(sess.ProjectID)
	if err != nil {
		return err
	}
	u, err := s.readMultipart(c, false)
	if err != nil {
		return err
	}
	defer u.file.Close()
	// Again now that the file is in: its key may have been revoked, or
	// the page left, while it came (a body may take minutes).
	if sess, err = s.store.SessionByToken(c.Param("token")); err != nil {
		return err
	}
	if err := ended(sess, s.store.Now()); err != nil {
		return err
	}
	// submit checks owners against the key's project; here the session
	// stands in for the key.
	c.Set(ctxProject, proj)
	return s.submit(c, uploadData{
		OwnerID:  sess.OwnerID,
		Name:     uploadName(u.fileName),
		Metadata: map[string]string{store.SessionMetaKey: sess.ID},
	}, "", u.file, "")
}

// uploadName makes a browser's file name a valid document name: an end user
// cannot rename a file on this page, so a long or odd name is trimmed
// rather than refused.
func uploadName(name string) string {
	name = strings.Map(func(r rune) rune {
		switch {
		case r == utf8.RuneError:
			return -1
		case unicode.IsControl(r):
			return ' '
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > maxNameLen {
		name = string([]rune(name)[:maxNameLen])
	}
	// What is left of a path ("..", "/") names nothing.
	if strings.Trim(name, `./\ `) == "" {
		name = "upload"
	}
	return name
}

// sessionJob is what the upload page shows of one upload.
type sessionJob struct {
	JobID      string    `json:"job_id"`
	DocumentID string    `json:"document_id"`
	Name       string    `json:"name"`
	Size       int64     `json:"size"`
	Status     string    `json:"status"`
	Error      string    `json:"error,omitempty"`
	Chunks     int       `json:"chunks"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}

func sessionJobOf(d *store.Document) sessionJob {
	return sessionJob{
		JobID: d.JobID, DocumentID: d.ID, Name: d.Name, Size: d.Size, Status: d.Status,
		Error: d.Error, Chunks: d.Chunks, CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt,
	}
}

// sessionJobs lists the uploads made through this session, oldest first.
// With job_id parameters it answers for those jobs only, which is what the
// page polls: a lookup per job instead of a scan of the owner's documents.
// A job of another session, owner or project is left out, as if it did not
// exist.
func (s *Server) sessionJobs(c echo.Context) error {
	sess, err := s.liveSession(c)
	if err != nil {
		return err
	}
	jobs := []sessionJob{}
	if ids := c.QueryParams()["job_id"]; len(ids) > 0 {
		if len(ids) > maxPolledJobs {
			return badRequest("job_id is given %d times, over the limit of %d", len(ids), maxPolledJobs)
		}
		for _, id := range ids {
			d, err := s.sessionDocument(sess, id)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			jobs = append(jobs, sessionJobOf(d))
		}
	} else {
		docs, err := s.store.SessionDocuments(sess.OwnerID, sess.ID)
		if err != nil {
			return err
		}
		for i := range docs {
			if docs[i].ProjectID == sess.ProjectID {
				jobs = append(jobs, sessionJobOf(&docs[i]))
			}
		}
	}
	sort.SliceStable(jobs, func(i, j int) bool { return jobs[i].CreatedAt.Before(jobs[j].CreatedAt) })
	return c.JSON(http.StatusOK, map[string]any{"jobs": jobs})
}

// sessionDocument returns the document of a job uploaded through sess, or
// store.ErrNotFound.
func (s *Server) sessionDocument(sess *store.Session, jobID string) (*store.Document, error) {
	j, err := s.store.Job(jobID)
	if err != nil {
		return nil, err
	}
	if j.ProjectID != sess.ProjectID || j.OwnerID != sess.OwnerID {
		return nil, store.ErrNotFound
	}
	d, err := s.store.Document(j.DocumentID)
	if err != nil {
		return nil, err
	}
	if d.Metadata[store.SessionMetaKey] != sess.ID {
		return nil, store.ErrNotFound
	}
	return d, nil
}

// reserveSessionUpload holds a place for one more upload through sess, or
// refuses it while the session already has SessionMaxPending files
// waiting to be indexed or on their way in. The place is taken before the
// body is read: counted only once their documents exist, sixty uploads
// sent at once through a link bounded to twenty all got in, each body held
// meanwhile. The caller releases the place once the upload is submitted or
// refused. Places are this server's: in a cluster the bound holds per node.
func (s *Server) reserveSessionUpload(c echo.Context, sess *store.Session) (release func(), err error) {
	docs, err := s.store.SessionDocuments(sess.OwnerID, sess.ID)
	if err != nil {
		return nil, err
	}
	waiting := 0
	for i := range docs {
		if d := &docs[i]; d.Status == store.StatusPending || d.Status == store.StatusProcessing {
			waiting++
		}
	}
	s.sessionsMu.Lock()
	defer s.sessionsMu.Unlock()
	arriving := s.sessionUploads[sess.ID]
	if waiting+arriving >= s.cfg.SessionMaxPending {
		c.Response().Header().Set("Retry-After", strconv.Itoa(sessionBacklogRetrySeconds))
		if arriving > 0 {
			return nil, errorf(http.StatusTooManyRequests, "this upload link already has %d files waiting to be indexed and %d arriving; upload more once some have finished", waiting, arriving)
		}
		return nil, errorf(http.StatusTooManyRequests, "this upload link already has %d files waiting to be indexed; upload more once some have finished", waiting)
	}
	s.sessionUploads[sess.ID]++
	return func() {
		s.sessionsMu.Lock()
		defer s.sessionsMu.Unlock()
		if s.sessionUploads[sess.ID]--; s.sessionUploads[sess.ID] <= 0 {
			delete(s.sessionUploads, sess.ID)
		}
	}, nil
}
