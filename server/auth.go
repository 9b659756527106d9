package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/store"
	"github.com/labstack/echo/v4"
)

// Context keys of an authenticated request: its project and the id of the key.
const (
	ctxProject = "docsift.project"
	ctxKeyID   = "docsift.key_id"
)

// requireKey authenticates the bearer API key and puts its project in the
// context. A missing, malformed, unknown or revoked key is a 401; which of
// those it was is said, but nothing about any project.
func (s *Server) requireKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header.Get(echo.HeaderAuthorization)
		if h == "" {
			return s.unauthorized(c, "missing API key: send the header Authorization: Bearer <api_key>")
		}
		scheme, key, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(key) == "" {
			return s.unauthorized(c, "malformed Authorization header: use Authorization: Bearer <api_key>")
		}
		p, keyID, err := s.store.Authenticate(strings.TrimSpace(key))
		if errors.Is(err, store.ErrNotFound) {
			return s.unauthorized(c, "invalid or revoked API key")
		}
		if err != nil {
			return err
		}
		// A request another node passed on was counted there.
		if !s.fromNode(c) {
			if err := s.projectLimit.check(c, p.ID); err != nil {
				return err
			}
		}
		c.Set(ctxProject, p)
		c.Set(ctxKeyID, keyID)
		return next(c)
	}
}

func (s *Server) unauthorized(c echo.Context, msg string) error {
	c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="docsift"`)
	return errorf(http.StatusUnauthorized, "%s", msg)
}

func project(c echo.Context) *store.Project { return c.Get(ctxProject).(*store.Project) }

// checkProject enforces that a project id sent in a body's field is the
// key's own.
func checkProject(c echo.Context, field, projectID string) error {
	switch {
	case projectID == "":
		return badRequest("%s is required", field)
	case !strings.HasPrefix(projectID, store.PrefixProject):
		return badRequest("%s %s is not a project id (prj_…)", field, clip.Quote(projectID))
	case projectID != project(c).ID:
		return errorf(http.StatusForbidden, "%s %s is not the project of this API key", field, clip.String(projectID))
	}
	return nil
}

// customerOf returns a customer of the key's project. A customer of another
// project is not found, exactly like one that does not exist.
func (s *Server) customerOf(c echo.Context, customerID string) (*store.Customer, error) {
	if customerID == "" {
		return nil, badRequest("customer_id is required")
	}
	cus, err := s.store.Customer(customerID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && cus.ProjectID != project(c).ID) {
		return nil, notFound("customer %s not found", clip.String(customerID))
	}
	return cus, err
}

// ownerOf checks that an owner_id is the key's project or one of its
// customers and returns it.
func (s *Server) ownerOf(c echo.Context, ownerID string) (string, error) {
	switch {
	case ownerID == "":
		return "", badRequest("owner_id is required")
	case strings.HasPrefix(ownerID, store.PrefixProject):
		return ownerID, checkProject(c, "owner_id", ownerID)
	case strings.HasPrefix(ownerID, store.PrefixCustomer):
		cus, err := s.customerOf(c, ownerID)
		if err != nil {
			return "", err
		}
		return cus.ID, nil
	}
	return "", badRequest("owner_id %s is neither a project id (prj_…) nor a customer id (cus_…)", clip.Quote(ownerID))
}

// documentOf returns a document of the key's project, or 404.
func (s *Server) documentOf(c echo.Context, id string) (*store.Document, error) {
	d, err := s.store.Document(id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && d.ProjectID != project(c).ID) {
		return nil, notFound("document %s not found", clip.String(id))
	}
	return d, err
}
