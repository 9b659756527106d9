package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/docsift/docsift/store"
	"github.com/labstack/echo/v4"
)

// maxNameLen bounds customer and document names: they are labels, and a
// megabyte "name" is a mistake worth saying so about.
const maxNameLen = 200

// customerResponse is a customer as the API shows it.
type customerResponse struct {
	CustomerID string    `json:"customer_id"`
	ProjectID  string    `json:"project_id"`
	Name       string    `json:"name"`
	CreatedAt  time.Time `json:"created_at"`
}

func customerOf(c *store.Customer) customerResponse {
	return customerResponse{CustomerID: c.ID, ProjectID: c.ProjectID, Name: c.Name, CreatedAt: c.CreatedAt}
}

type createCustomerRequest struct {
	ProjectID string `json:"project_id"`
	Name      string `json:"name"`
}

func (s *Server) createCustomer(c echo.Context) error {
	var req createCustomerRequest
	if err := decodeJSON(c, maxJSONBytes, &req); err != nil {
		return err
	}
	if err := checkProject(c, req.ProjectID); err != nil {
		return err
	}
	name := strings.TrimSpace(req.Name)
	if err := checkName("name", name, true); err != nil {
		return err
	}
	cus, err := s.store.CreateCustomer(req.ProjectID, name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, customerOf(cus))
}

func (s *Server) listCustomers(c echo.Context) error {
	cs, err := s.store.Customers(project(c).ID)
	if err != nil {
		return err
	}
	out := make([]customerResponse, len(cs))
	for i := range cs {
		out[i] = customerOf(&cs[i])
	}
	return c.JSON(http.StatusOK, map[string]any{"customers": out})
}
