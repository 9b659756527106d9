package server

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPIDoc describes every route. It is written by hand, and a test walks
// echo's routes to keep the two in step.
//
//go:embed openapi.json
var openAPIDoc []byte

func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPIDoc)
}
