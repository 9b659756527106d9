package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/docsift/docsift/internal/clip"
	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/webhook"
	"github.com/labstack/echo/v4"
)

// The deliveries list is for looking at, not for export.
const (
	defaultDeliveries = 50
	maxDeliveries     = 500
)

type createWebhookRequest struct {
	URL    string   `json:"url"`
	Events []string `json:"events"`
}

// webhookResponse is a webhook as the API shows it; the secret only in the
// answer to creating it.
type webhookResponse struct {
	WebhookID string    `json:"webhook_id"`
	URL       string    `json:"url"`
	Events    []string  `json:"events"`
	Secret    string    `json:"secret,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func webhookOf(w *store.Webhook) webhookResponse {
	return webhookResponse{WebhookID: w.ID, URL: w.URL, Events: w.Events, CreatedAt: w.CreatedAt}
}

type deliveryResponse struct {
	DeliveryID  string    `json:"delivery_id"`
	EventID     string    `json:"event_id"`
	Event       string    `json:"event"`
	JobID       string    `json:"job_id"`
	Status      string    `json:"status"`
	Attempts    int       `json:"attempts"`
	LastStatus  int       `json:"last_status,omitempty"`
	LastError   string    `json:"last_error,omitempty"`
	NextAttempt time.Time `json:"next_attempt_at,omitzero"`
	CreatedAt   time.Time `json:"created_at"`
	DeliveredAt time.Time `json:"delivered_at,omitzero"`
}

func (s *Server) createWebhook(c echo.Context) error {
	var req createWebhookRequest
	if err := decodeJSON(c, maxJSONBytes, &req); err != nil {
		return err
	}
	if err := webhook.CheckEndpoint(req.URL, req.Events); err != nil {
		return badRequest("%s", err)
	}
	p := project(c)
	have, err := s.store.Webhooks(p.ID)
	if err != nil {
		return err
	}
	if err := webhook.CheckRoom(len(have)); err != nil {
		return badRequest("%s", err)
	}
	var addrErr *webhook.AddressError
	if err := webhook.CheckAddress(c.Request().Context(), s.cfg.WebhookGuard, req.URL); errors.As(err, &addrErr) && addrErr.Temporary {
		c.Response().Header().Set("Retry-After", "5")
		return errorf(http.StatusServiceUnavailable, "%s", err)
	} else if err != nil {
		return badRequest("%s", err)
	}
	w, err := s.store.CreateWebhook(p.ID, req.URL, webhook.EventSet(req.Events))
	if err != nil {
		return err
	}
	resp := webhookOf(w)
	resp.Secret = w.Secret
	return c.JSON(http.StatusOK, resp)
}

func (s *Server) listWebhooks(c echo.Context) error {
	ws, err := s.store.Webhooks(project(c).ID)
	if err != nil {
		return err
	}
	out := make([]webhookResponse, len(ws))
	for i := range ws {
		out[i] = webhookOf(&ws[i])
	}
	return c.JSON(http.StatusOK, map[string]any{"webhooks": out})
}

// projectWebhook returns the webhook of the path if it is the key's
// project's; otherwise a 404, as for one that does not exist.
func (s *Server) projectWebhook(c echo.Context) (*store.Webhook, error) {
	id := c.Param("webhook_id")
	w, err := s.store.Webhook(id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && w.ProjectID != project(c).ID) {
		return nil, notFound("webhook %s not found", clip.String(id))
	}
	return w, err
}

func (s *Server) deleteWebhook(c echo.Context) error {
	w, err := s.projectWebhook(c)
	if err != nil {
		return err
	}
	if err := s.store.DeleteWebhook(w.ID); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"webhook_id": w.ID, "deleted": true})
}

func (s *Server) listDeliveries(c echo.Context) error {
	w, err := s.projectWebhook(c)
	if err != nil {
		return err
	}
	limit, err := queryLimit(c, defaultDeliveries, maxDeliveries)
	if err != nil {
		return err
	}
	ds, err := s.store.Deliveries(w.ID, limit)
	if err != nil {
		return err
	}
	out := make([]deliveryResponse, len(ds))
	for i, d := range ds {
		out[i] = deliveryResponse{
			DeliveryID: d.ID, EventID: d.Event.ID, Event: d.Event.Type, JobID: d.Event.JobID,
			Status: d.Status, Attempts: d.Attempts, LastStatus: d.LastStatus, LastError: webhook.ShownError(d, s.cfg.ShowWebhookReplies),
			NextAttempt: d.NextAttempt, CreatedAt: d.CreatedAt, DeliveredAt: d.DeliveredAt,
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"deliveries": out})
}
