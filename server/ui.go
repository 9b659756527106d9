package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/pdf"
	"github.com/docsift/docsift/ui"
	"github.com/labstack/echo/v4"
)

const (
	// uiAssetPrefix is where the pages' CSS and JavaScript are served.
	uiAssetPrefix = "/ui/assets/"

	// maxPolledJobs bounds the job ids one GET /s/{token}/jobs may name.
	maxPolledJobs = 200

	// uiCSP is the Content-Security-Policy of every page and asset: scripts,
	// styles and requests only from this server, nothing inline, no frames,
	// no form posts. The pages are built for it (no inline script or style).
	uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

	// Messages of the session pages and endpoints. They speak to the end
	// user, who can do nothing but ask for a new link.
	msgSessionUnknown = "This upload link is not valid, or it ended a while ago. Ask the site that sent you here for a new one."
	msgSessionExpired = "This upload link has expired. Ask the site that sent you here for a new one."
	msgSessionClosed  = "This upload link was closed when the page was left with Done or Cancel. Files uploaded through it are kept; ask the site that sent you here for a new link to add more."
	msgSessionRevoked = "This upload link was withdrawn by the site that made it. Files uploaded through it are kept; ask the site that sent you here for a new link to add more."
)

// uiTemplates are the pages, parsed once: they are embedded, so a parse
// error is a bug caught by the first test that loads the package.
var uiTemplates = template.Must(template.New("ui").Funcs(template.FuncMap{
	"asset": assetURL,
}).ParseFS(ui.Templates(), "*.html"))

// uiAsset is one embedded file as served: bytes, type and a content hash
// for the ETag and the cache-busting ?v= of its URL.
type uiAsset struct {
	body        []byte
	contentType string
	version     string
}

var uiAssets = loadAssets(ui.Assets())

func loadAssets(fsys fs.FS) map[string]uiAsset {
	assets := map[string]uiAsset{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		ctype := mime.TypeByExtension(path.Ext(p))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		sum := sha256.Sum256(body)
		assets[p] = uiAsset{body: body, contentType: ctype, version: hex.EncodeToString(sum[:6])}
		return nil
	})
	if err != nil {
		panic("server: reading embedded UI assets: " + err.Error())
	}
	return assets
}

// assetURL is the template function that names an asset with its version,
// so a browser can cache it for good and still get a changed file at once.
func assetURL(name string) (string, error) {
	a, ok := uiAssets[name]
	if !ok {
		return "", errors.New("no UI asset " + name)
	}
	return uiAssetPrefix + name + "?v=" + a.version, nil
}

// routesUI adds the pages docsift hosts for people, and what they call: the
// upload page a session URL opens with its two token endpoints, the
// console, its GET /me, and the assets of both.
func (s *Server) routesUI(e *echo.Echo) {
	e.GET("/s/:token", s.sessionPage, uiHeaders)
	e.POST("/s/:token/upload", s.sessionUpload, uiHeaders)
	e.GET("/s/:token/jobs", s.sessionJobs, uiHeaders)
	e.POST("/s/:token/close", s.sessionClose, uiHeaders)
	s.routesDrive(e)
	e.GET("/console", s.consolePage, uiHeaders)
	e.GET(uiAssetPrefix+":name", serveAsset, uiHeaders)
	e.GET("/me", s.me, s.requireKey)
}

// uiHeaders sets the security headers of every UI response, JSON errors
// included. No Referer leaves a session page, so its token cannot leak to
// the sites it links to; nothing is cached, since a page and its answers
// belong to one person's link.
func uiHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", uiCSP)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set(echo.HeaderCacheControl, "no-store")
		return next(c)
	}
}

func serveAsset(c echo.Context) error {
	name := c.Param("name")
	a, ok := uiAssets[name]
	if !ok {
		return notFound("no UI asset %s", clip.String(name))
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, a.contentType)
	h.Set("ETag", `"`+a.version+`"`)
	if c.QueryParam("v") == a.version {
		h.Set(echo.HeaderCacheControl, "public, max-age=31536000, immutable")
	} else {
		h.Set(echo.HeaderCacheControl, "no-cache")
	}
	// Embedded files have no modification time; the ETag answers
	// conditional requests.
	http.ServeContent(c.Response(), c.Request(), name, time.Time{}, bytes.NewReader(a.body))
	return nil
}

// renderPage writes one of the UI templates as an HTML response.
func renderPage(c echo.Context, status int, name string, data any) error {
	var buf bytes.Buffer
	if err := uiTemplates.ExecuteTemplate(&buf, name, data); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}

type noticePage struct {
	Title, Message, Hint string
}

func renderNotice(c echo.Context, status int, title, msg string) error {
	return renderPage(c, status, "notice.html", noticePage{Title: title, Message: msg})
}

// errSessionExpired and errSessionUnknown tell the page what to render; the
// JSON endpoints answer them as 410 and 404.
var (
	errSessionUnknown = errorf(http.StatusNotFound, "%s", msgSessionUnknown)
	errSessionExpired = errorf(http.StatusGone, "%s", msgSessionExpired)
	errSessionClosed  = errorf(http.StatusGone, "%s", msgSessionClosed)
	errSessionRevoked = errorf(http.StatusGone, "%s", msgSessionRevoked)
)

type uploadPage struct {
	Title                     string
	ProjectName, CustomerName string
	Upload, Drive             bool
	DriveNote                 string // why a session that asked for Drive has none
	DriveConnected            bool
	DriveMessage              string // how the last sign-in went
	DriveURL                  string // the page's Drive endpoints hang off it
	Types                     string
	MaxBytes                  int64
	MaxLabel                  string
	UploadURL, JobsURL        string
	CloseURL                  string
	SuccessURL, CancelURL     string
	ExpiresISO, ExpiresLabel  string
}

// sessionPage is the hosted upload page a session URL opens. Done and
// Cancel link to the URLs stored with the session, and only those: nothing
// in the request can choose where the user is sent.
func (s *Server) sessionPage(c echo.Context) error {
	sess, err := s.liveSession(c)
	switch {
	case errors.Is(err, errSessionUnknown):
		return renderNotice(c, http.StatusNotFound, "Upload link not found", msgSessionUnknown)
	case errors.Is(err, errSessionExpired), errors.Is(err, errSessionClosed), errors.Is(err, errSessionRevoked):
		return endedNotice(c, err)
	case isStatus(err, http.StatusTooManyRequests):
		return renderNotice(c, http.StatusTooManyRequests, "Too many requests", "This upload link was used too often in a short time. Wait a few seconds and reload the page.")
	case err != nil:
		return err
	}
	proj, err := s.store.Project(sess.ProjectID)
	if err != nil {
		return err
	}
	data := uploadPage{
		Title:       "Upload documents for " + proj.Name,
		ProjectName: proj.Name,
		Types:       strings.Join(pdf.Supported(), ", "),
		MaxBytes:    s.cfg.MaxFileBytes,
		MaxLabel:    humanBytes(s.cfg.MaxFileBytes),
		SuccessURL:  sess.SuccessURL,
		CancelURL:   sess.CancelURL,
		// The token is in the path already; the page's endpoints hang off it.
		UploadURL:    c.Request().URL.Path + "/upload",
		JobsURL:      c.Request().URL.Path + "/jobs",
		CloseURL:     c.Request().URL.Path + "/close",
		ExpiresISO:   sess.ExpiresAt.UTC().Format(time.RFC3339),
		ExpiresLabel: sess.ExpiresAt.UTC().Format("2 Jan 2006, 15:04 MST"),
	}
	var driveNote bool
	data.Upload, data.Drive, driveNote = sessionServices(sess, s.cfg.Drive != nil)
	if driveNote {
		data.DriveNote = msgDriveOffPage + "."
		if data.Upload {
			data.DriveNote += " Upload the files from your device instead."
		} else {
			data.DriveNote += " Ask the site that sent you here for another way to send your files."
		}
	}
	if data.Drive {
		data.DriveURL = c.Request().URL.Path + "/drive"
		data.DriveConnected = s.cfg.Drive.Connected(sess.ID)
		data.DriveMessage = driveOutcomeMessage(c.QueryParam("drive"), data.DriveConnected)
	}
	if sess.CustomerID != "" {
		cus, err := s.store.Customer(sess.CustomerID)
		if err != nil {
			return err
		}
		data.CustomerName = cus.Name
	}
	return renderPage(c, http.StatusOK, "upload.html", data)
}

// consolePage is the console for project owners. It is a static page: the
// API key is pasted into it and every call it makes is a public API call
// with that key.
func (s *Server) consolePage(c echo.Context) error {
	return renderPage(c, http.StatusOK, "console.html", struct{ Title string }{"Console"})
}

// me tells a key's holder which project the key belongs to; the console
// needs the project id for project queries and uploads.
func (s *Server) me(c echo.Context) error {
	p := project(c)
	return c.JSON(http.StatusOK, map[string]string{"project_id": p.ID, "name": p.Name})
}
