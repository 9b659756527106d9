package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// routesUI adds the pages docsift hosts for people: the upload page a
// session URL opens.
func (s *Server) routesUI(e *echo.Echo) {
	e.GET("/s/:token", s.sessionPage)
}

// sessionPage is where a session's URL lands. The hosted upload page is not
// built yet; this says so, and says whether the session is usable.
func (s *Server) sessionPage(c echo.Context) error {
	sess, err := s.store.SessionByToken(c.Param("token"))
	c.Response().Header().Set("Referrer-Policy", "no-referrer")
	c.Response().Header().Set("Cache-Control", "no-store")
	switch {
	case err != nil:
		return c.HTML(http.StatusNotFound, page("Upload link not found", "This upload link is not valid. Ask the site that sent you here for a new one."))
	case sess.Expired(s.store.Now()):
		return c.HTML(http.StatusGone, page("Upload link expired", "This upload link has expired. Ask the site that sent you here for a new one."))
	}
	return c.HTML(http.StatusOK, page("Upload page coming", fmt.Sprintf("This session is valid until %s. The hosted upload page is not available in this version yet.", sess.ExpiresAt.Format(time.RFC1123))))
}

func page(title, body string) string {
	return `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>` +
		title + ` · docsift</title><body style="font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem"><h1>` +
		title + `</h1><p>` + body + `</p></body></html>`
}
