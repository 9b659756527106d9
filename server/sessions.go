package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/docsift/docsift/store"
	"github.com/labstack/echo/v4"
)

// Session services. "all" means every service this server offers.
const (
	serviceAll         = "all"
	serviceFileUpload  = "file_upload"
	serviceGoogleDrive = "google_drive"
)

var knownServices = []string{serviceAll, serviceFileUpload, serviceGoogleDrive}

// sessionRequest is the body of /session/single-tenant; the multi-tenant
// one adds customer_id.
type sessionRequest struct {
	ProjectID  string     `json:"project_id"`
	Services   stringList `json:"services"`
	SuccessURL string     `json:"success_url"`
	CancelURL  string     `json:"cancel_url"`
}

type multiTenantSessionRequest struct {
	sessionRequest
	CustomerID string `json:"customer_id"`
}

type sessionResponse struct {
	URL       string    `json:"url"`
	SessionID string    `json:"session_id"`
	OwnerID   string    `json:"owner_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

func (s *Server) createMultiTenantSession(c echo.Context) error {
	var req multiTenantSessionRequest
	if err := decodeJSON(c, maxJSONBytes, &req); err != nil {
		return err
	}
	if err := checkProject(c, "project_id", req.ProjectID); err != nil {
		return err
	}
	cus, err := s.customerOf(c, req.CustomerID)
	if err != nil {
		return err
	}
	return s.createSession(c, req.sessionRequest, cus.ID)
}

func (s *Server) createSingleTenantSession(c echo.Context) error {
	var req sessionRequest
	if err := decodeJSON(c, maxJSONBytes, &req); err != nil {
		return err
	}
	if err := checkProject(c, "project_id", req.ProjectID); err != nil {
		return err
	}
	return s.createSession(c, req, req.ProjectID)
}

func (s *Server) createSession(c echo.Context, req sessionRequest, owner string) error {
	if err := checkServices(req.Services, s.cfg.Drive != nil); err != nil {
		return err
	}
	for _, f := range []struct{ name, value string }{{"success_url", req.SuccessURL}, {"cancel_url", req.CancelURL}} {
		if err := checkRedirectURL(f.name, f.value); err != nil {
			return err
		}
	}
	customerID := ""
	if owner != req.ProjectID {
		customerID = owner
	}
	sess, token, err := s.store.CreateSession(store.Session{
		ProjectID: req.ProjectID, OwnerID: owner, CustomerID: customerID, KeyID: c.Get(ctxKeyID).(string),
		Services: req.Services, SuccessURL: req.SuccessURL, CancelURL: req.CancelURL,
	}, s.cfg.SessionTTL, s.projectLimits())
	if errors.Is(err, store.ErrKeyRevoked) { // while the request was read
		return s.unauthorized(c, "invalid or revoked API key")
	}
	if err != nil {
		return s.overQuota(c, err, req.ProjectID, store.ProjectUsage{Sessions: 1})
	}
	return c.JSON(http.StatusOK, sessionResponse{
		URL: s.cfg.BaseURL + "/s/" + token, SessionID: sess.ID, OwnerID: owner, ExpiresAt: sess.ExpiresAt,
	})
}
