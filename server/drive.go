package server

// Google Drive import on the hosted upload page. The drive package signs
// the user in and talks to Google; this file translates HTTP: who may ask
// (a live session that offers google_drive), what the page sees, and how
// an imported file joins the session's uploads through the same submit
// path, limits and job status as a file from the user's device.
//
// The sign-in is OAuth 2.0's authorization code flow with PKCE. Its state
// is bound three ways: to the session (the sign-in is filed under the
// session's id and ends with it), to the browser that began it (a cookie
// holding the state, sent only to the callback), and to one use (the state
// is claimed, whatever happens next).

import (
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/docsift/docsift/drive"
	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/store"
	"github.com/labstack/echo/v4"
)

const (
	// DriveCallbackPath is where Google sends the user back after consent.
	// The OAuth client's authorized redirect URI is the base URL plus this.
	DriveCallbackPath = "/oauth/google/callback"

	// driveCookiePrefix names the cookie that binds a sign-in to the
	// browser that began it; the session id completes the name, so one
	// browser can sign in for two sessions at once.
	driveCookiePrefix = "docsift_drive_"

	// driveImportTimeout bounds fetching one file from Drive.
	driveImportTimeout = 5 * time.Minute
	// driveRetryAfterSeconds is the Retry-After of a rate-limited import:
	// Google's per-user quota refills within a minute.
	driveRetryAfterSeconds = 30
	// maxDriveSearchRunes bounds a name search.
	maxDriveSearchRunes = 200
	// maxDrivePageToken bounds a listing's continuation token.
	maxDrivePageToken = 2048

	// Metadata of an imported document, next to session_id: where it came
	// from, so a project can tell imports from uploads.
	driveMetaSource = "source"
	driveMetaFileID = "google_drive_file_id"
	driveSourceName = "google_drive"
	// driveExternalPrefix and the file's id are an import's external_id.
	driveExternalPrefix = "google_drive:"

	// msgDriveOff says what the operator must set, to the project's
	// backend; the pages tell the end user, who sets nothing, msgDriveOffPage.
	msgDriveOff     = "Google Drive import is not available on this server because no Google OAuth client is configured: the operator sets --google-client-id and --google-client-secret"
	msgDriveOffPage = "Google Drive import is not set up on this server"
	// msgDriveNotConnected asks the user to sign in (again).
	msgDriveNotConnected = "Google Drive is not connected to this upload link, or Google ended the connection: choose Import from Google Drive and sign in again"
)

// DriveRedirectURL is the OAuth redirect URI of a server reached at
// baseURL: the one to register with Google and to give drive.Config.
func DriveRedirectURL(baseURL string) string {
	return strings.TrimRight(baseURL, "/") + DriveCallbackPath
}

// routesDrive adds the Drive endpoints of the hosted page. They are served
// whether or not a Google client is configured, so that a page or script
// asking for them hears why they do not work.
func (s *Server) routesDrive(e *echo.Echo) {
	e.POST("/s/:token/drive/connect", s.driveConnect, uiHeaders)
	e.GET("/s/:token/drive/files", s.driveFiles, uiHeaders)
	e.POST("/s/:token/drive/import", s.driveImport, uiHeaders)
	e.POST("/s/:token/drive/disconnect", s.driveDisconnect, uiHeaders)
	e.GET(DriveCallbackPath, s.driveCallback, uiHeaders)
}

// sessionOffersDrive reports whether a session's page offers Drive import
// (given a configured client).
func sessionOffersDrive(sess *store.Session) bool {
	return slices.Contains(sess.Services, serviceAll) || slices.Contains(sess.Services, serviceGoogleDrive)
}

// driveSession returns the request's live session if it may import from
// Drive on this server.
func (s *Server) driveSession(c echo.Context) (*store.Session, error) {
	sess, err := s.liveSession(c)
	if err != nil {
		return nil, err
	}
	if s.cfg.Drive == nil {
		return nil, featureOff(msgDriveOff)
	}
	if !sessionOffersDrive(sess) {
		return nil, errorf(http.StatusForbidden, "this upload link does not allow Google Drive import")
	}
	return sess, nil
}

type driveConnectResponse struct {
	AuthURL string `json:"auth_url"`
}

// driveConnect begins a sign-in: it answers the URL of Google's consent
// page, where the page sends the browser, and sets the cookie that the
// callback compares with the state Google sends back.
func (s *Server) driveConnect(c echo.Context) error {
	sess, err := s.driveSession(c)
	if err != nil {
		return err
	}
	signIn, authURL, err := s.cfg.Drive.BeginSignIn(sess.ID, c.Param("token"), sess.ExpiresAt)
	switch {
	case errors.Is(err, drive.ErrSignInExpired):
		return errSessionExpired
	case errors.Is(err, drive.ErrBusy), errors.Is(err, drive.ErrClosed):
		c.Response().Header().Set("Retry-After", strconv.Itoa(driveRetryAfterSeconds))
		return errorf(http.StatusServiceUnavailable, "too many Google sign-ins are under way on this server: try again in a minute")
	case err != nil:
		return err
	}
	http.SetCookie(c.Response(), &http.Cookie{
		Name:     driveCookiePrefix + sess.ID,
		Value:    signIn.State(),
		Path:     DriveCallbackPath,
		Expires:  signIn.Expires,
		MaxAge:   max(1, int(time.Until(signIn.Expires).Seconds())),
		HttpOnly: true,
		Secure:   strings.HasPrefix(s.cfg.BaseURL, "https://"),
		// Lax: the cookie goes with the top-level redirect back from
		// Google, and with nothing another site makes the browser send.
		SameSite: http.SameSiteLaxMode,
	})
	return c.JSON(http.StatusOK, driveConnectResponse{AuthURL: authURL})
}

// Outcomes of a sign-in, as the callback reports them to the page in its
// ?drive= parameter.
const (
	driveConnected = "connected"
	driveDenied    = "denied"
	driveFailed    = "failed"
	driveBroken    = "unavailable" // the server's OAuth client is refused
)

// driveCallback is where Google sends the browser back. It claims the
// sign-in by its state (once), checks that this browser began it for a
// session that still lives, exchanges the code and sends the browser back
// to the session's page, which says how it went. Anything wrong with the
// state itself gets a page, not a redirect: there is no session to return
// to that can be trusted.
func (s *Server) driveCallback(c echo.Context) error {
	const retry = "Go back to the upload page and choose Import from Google Drive again."
	if s.cfg.Drive == nil {
		return renderNotice(c, http.StatusNotFound, "Google Drive import is not available", msgDriveOffPage+".")
	}
	state := c.QueryParam("state")
	signIn, err := s.cfg.Drive.ClaimSignIn(state)
	switch {
	case errors.Is(err, drive.ErrSignInExpired):
		return renderNotice(c, http.StatusBadRequest, "Google sign-in expired", "The Google sign-in took too long. "+retry)
	case err != nil:
		return renderNotice(c, http.StatusBadRequest, "Google sign-in not valid", "This Google sign-in is not valid or was already used. "+retry)
	}
	cookieName := driveCookiePrefix + signIn.Key
	http.SetCookie(c.Response(), &http.Cookie{Name: cookieName, Value: "", Path: DriveCallbackPath, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	if ck, err := c.Cookie(cookieName); err != nil || subtle.ConstantTimeCompare([]byte(ck.Value), []byte(state)) != 1 {
		return renderNotice(c, http.StatusBadRequest, "Google sign-in not valid", "This Google sign-in was started in another browser or for another upload link. "+retry)
	}
	sess, err := s.store.SessionByToken(signIn.Resume)
	switch {
	case errors.Is(err, store.ErrNotFound) || err == nil && sess.ID != signIn.Key:
		return renderNotice(c, http.StatusNotFound, "Upload link not found", msgSessionUnknown)
	case err != nil:
		return err
	}
	if err := ended(sess, s.store.Now()); err != nil {
		return endedNotice(c, err)
	}
	outcome := driveConnected
	switch errCode := c.QueryParam("error"); {
	case errCode == "access_denied":
		outcome = driveDenied
	case errCode != "":
		s.log.Warn("Google refused the Drive sign-in", "request_id", requestID(c), "session_id", sess.ID, "error", clip.String(errCode))
		outcome = driveFailed
	default:
		err := s.cfg.Drive.FinishSignIn(c.Request().Context(), signIn, c.QueryParam("code"))
		switch {
		case errors.Is(err, drive.ErrClientRejected):
			s.log.Error("Google refused this server's OAuth client: check --google-client-id and --google-client-secret against the client in Google Cloud's console", "request_id", requestID(c), "err", err)
			outcome = driveBroken
		case err != nil:
			s.log.Warn("Google Drive sign-in failed", "request_id", requestID(c), "session_id", sess.ID, "err", err)
			outcome = driveFailed
		}
	}
	back := s.cfg.BaseURL + "/s/" + url.PathEscape(signIn.Resume) + "?drive=" + outcome
	return c.Redirect(http.StatusSeeOther, back)
}

// driveItem is one entry of the picker.
type driveItem struct {
	ID           string     `json:"id"`
	Name         string     `json:"name"`
	MimeType     string     `json:"mime_type"`
	Type         string     `json:"type"`
	Folder       bool       `json:"folder"`
	Size         *int64     `json:"size"`
	ModifiedTime *time.Time `json:"modified_time"`
	Importable   bool       `json:"importable"`
	Refused      string     `json:"refused,omitempty"`
}

type driveListing struct {
	Files         []driveItem `json:"files"`
	NextPageToken string      `json:"next_page_token,omitempty"`
}

// driveFiles lists a folder of the user's Drive, or searches it by name,
// marking what cannot be imported and why before anything is fetched.
func (s *Server) driveFiles(c echo.Context) error {
	sess, err := s.driveSession(c)
	if err != nil {
		return err
	}
	q := drive.Query{
		Folder:    c.QueryParam("folder"),
		Name:      strings.TrimSpace(c.QueryParam("q")),
		PageToken: c.QueryParam("page_token"),
	}
	switch {
	case utf8.RuneCountInString(q.Name) > maxDriveSearchRunes:
		return badRequest("q is over the limit of %d characters", maxDriveSearchRunes)
	case strings.IndexFunc(q.Name, unicode.IsControl) >= 0 || !utf8.ValidString(q.Name):
		return badRequest("q holds control characters or invalid UTF-8")
	case len(q.PageToken) > maxDrivePageToken:
		return badRequest("page_token is over the limit of %d characters", maxDrivePageToken)
	}
	l, err := s.cfg.Drive.List(c.Request().Context(), sess.ID, q)
	if err != nil {
		return s.driveError(c, err, "folder")
	}
	out := driveListing{Files: make([]driveItem, 0, len(l.Files)), NextPageToken: l.NextPageToken}
	for i := range l.Files {
		out.Files = append(out.Files, s.driveItemOf(&l.Files[i]))
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) driveItemOf(f *drive.File) driveItem {
	it := driveItem{ID: f.ID, Name: f.Name, MimeType: f.MimeType, Type: drive.TypeLabel(f.MimeType), Folder: f.Folder()}
	if f.Size >= 0 {
		size := f.Size
		it.Size = &size
	}
	if !f.ModifiedTime.IsZero() {
		t := f.ModifiedTime.UTC()
		it.ModifiedTime = &t
	}
	if !it.Folder {
		_, it.Refused = driveRefusal(f.Importable(s.cfg.MaxFileBytes), s.cfg.MaxFileBytes)
		it.Importable = it.Refused == ""
	}
	return it
}

type driveImportRequest struct {
	FileID string `json:"file_id"`
}

// driveImport fetches one file of the user's Drive and submits it as an
// upload of the session's owner: same pending bound, rate limit, submit
// path and job as a file from the device. The size is checked against the
// limit before the download, and the download stops at the limit.
func (s *Server) driveImport(c echo.Context) error {
	sess, err := s.driveSession(c)
	if err != nil {
		return err
	}
	var req driveImportRequest
	if err := decodeJSON(c, maxJSONBytes, &req); err != nil {
		return err
	}
	if req.FileID == "" {
		return badRequest("file_id is required: the id of a file in the listing")
	}
	release, err := s.reserveSessionUpload(c, sess)
	if err != nil {
		return err
	}
	defer release()
	// Before the download, as before a body is read.
	if err := s.projectRoom(c, sess.ProjectID, store.ProjectUsage{Documents: 1}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), driveImportTimeout)
	defer cancel()
	f, body, err := s.cfg.Drive.Fetch(ctx, sess.ID, req.FileID, s.cfg.MaxFileBytes)
	if err != nil {
		return s.driveError(c, err, "file_id")
	}
	// Spooled to disk as it arrives, as a file from the device is.
	src := &bodyReader{r: body}
	orig, err := store.Spool(s.cfg.SpoolDir, src, s.cfg.MaxFileBytes)
	body.Close()
	switch {
	case errors.Is(err, store.ErrOriginalTooLarge):
		return s.driveError(c, &drive.TooLargeError{Size: -1, Limit: s.cfg.MaxFileBytes}, "file_id")
	case src.err != nil && src.err != io.EOF:
		return s.driveError(c, src.err, "file_id")
	case err != nil:
		return err
	}
	defer orig.Close()
	proj, err := s.store.Project(sess.ProjectID)
	if err != nil {
		return err
	}
	// As for a session upload, the session stands in for the key.
	c.Set(ctxProject, proj)
	// The file's id names the document, so that importing it again
	// replaces the earlier import instead of adding a copy.
	return s.submit(c, uploadData{
		OwnerID:    sess.OwnerID,
		Name:       uploadName(f.Name),
		ExternalID: driveExternalPrefix + f.ID,
		Metadata: map[string]string{
			store.SessionMetaKey: sess.ID,
			driveMetaSource:      driveSourceName,
			driveMetaFileID:      f.ID,
		},
	}, "", orig, "")
}

type driveDisconnectResponse struct {
	Disconnected bool `json:"disconnected"`
	// Revoked says whether Google confirmed the end of the grant; when it
	// did not, the grant is forgotten here all the same.
	Revoked bool `json:"revoked"`
}

// driveDisconnect forgets the session's Drive grant and revokes it at
// Google. The page calls it on Cancel.
func (s *Server) driveDisconnect(c echo.Context) error {
	sess, err := s.driveSession(c)
	if err != nil {
		return err
	}
	revoked := true
	if err := s.cfg.Drive.Disconnect(c.Request().Context(), sess.ID); err != nil {
		s.log.Warn("revoking a Google Drive grant failed; it ends at Google when its tokens expire", "request_id", requestID(c), "session_id", sess.ID, "err", err)
		revoked = false
	}
	return c.JSON(http.StatusOK, driveDisconnectResponse{Disconnected: true, Revoked: revoked})
}

// driveRefusal words why a file cannot be imported (drive.File.Importable)
// under a limit of limit bytes, with the status an import answers; 0 and
// "" for any other error.
func driveRefusal(err error, limit int64) (int, string) {
	var tooLarge *drive.TooLargeError
	var unsupported *drive.UnsupportedError
	switch {
	case errors.Is(err, drive.ErrFolder):
		return http.StatusBadRequest, "this is a folder: open it and choose files"
	case errors.As(err, &unsupported):
		return http.StatusUnsupportedMediaType, unsupported.Reason
	case errors.As(err, &tooLarge) && tooLarge.Size >= 0:
		return http.StatusRequestEntityTooLarge, "the file is " + overLimit(tooLarge.Size, limit)
	}
	return 0, ""
}

// driveError answers a failure of the drive package in the page's words.
// field names the request field an invalid id came in.
func (s *Server) driveError(c echo.Context, err error, field string) error {
	if status, msg := driveRefusal(err, s.cfg.MaxFileBytes); status != 0 {
		return errorf(status, "%s", msg)
	}
	var tooLarge *drive.TooLargeError
	switch {
	case errors.Is(err, drive.ErrNotConnected):
		return errorf(http.StatusUnauthorized, "%s", msgDriveNotConnected)
	case errors.Is(err, drive.ErrBadID):
		return badRequest("%s is not a Google Drive id", field)
	case errors.Is(err, drive.ErrNotFound):
		return notFound("the file is not in your Google Drive, or you can no longer open it")
	case errors.Is(err, drive.ErrRateLimited):
		c.Response().Header().Set("Retry-After", strconv.Itoa(driveRetryAfterSeconds))
		return errorf(http.StatusTooManyRequests, "Google Drive is limiting requests right now: try again in a minute")
	case errors.As(err, &tooLarge):
		return errorf(http.StatusRequestEntityTooLarge, "the file is over the limit of %s", humanBytes(s.cfg.MaxFileBytes))
	case errors.Is(err, drive.ErrExportTooLarge):
		return errorf(http.StatusRequestEntityTooLarge, "Google Drive cannot export a document this large: download it from Google Drive as PDF and upload that file")
	case errors.Is(err, drive.ErrNotImportable):
		return errorf(http.StatusUnsupportedMediaType, "this item has no content that can be imported")
	case errors.Is(err, drive.ErrRefused):
		return errorf(http.StatusForbidden, "Google Drive would not give this file (its owner may have turned downloading off, or Google cannot export it)")
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusServiceUnavailable, "Google Drive took too long to answer: try again")
	case errors.Is(err, drive.ErrUnavailable):
		s.log.Warn("Google Drive request failed", "request_id", requestID(c), "err", err)
		return errorf(http.StatusServiceUnavailable, "Google Drive is not answering as it should right now: try again in a moment")
	}
	return err
}

// driveOutcomeMessage is what the page says after a sign-in, from the
// ?drive= parameter the callback added. Only known outcomes have words,
// so the parameter cannot put text of a stranger's choosing on the page.
func driveOutcomeMessage(outcome string, connected bool) string {
	switch {
	case outcome == driveConnected && connected:
		return "Google Drive is connected. Choose the files to import."
	case outcome == driveDenied:
		return "Google Drive was not connected: access was not allowed. Nothing was imported."
	case outcome == driveFailed:
		return "Signing in to Google Drive did not work. Try again."
	case outcome == driveBroken:
		return "Google Drive import is not working on this server right now, whoever signs in. Upload the files from your device, or try again later."
	}
	return ""
}
