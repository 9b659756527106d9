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
	if err := checkProject(c, "project_id", req.ProjectID); err != nil {
		return err
	}
	name := strings.TrimSpace(req.Name)
	if err := checkName("name", name, true); err != nil {
		return err
	}
	cus, err := s.store.CreateCustomer(req.ProjectID, name, s.projectLimits())
	if err != nil {
		return s.overQuota(c, err, req.ProjectID, store.ProjectUsage{Customers: 1})
	}
	return c.JSON(http.StatusOK, customerOf(cus))
}

// The pages of GET /customers, as GET /documents's.
const (
	defaultCustomerPage = 100
	maxCustomerPage     = 1000
)

// listCustomers lists the key's project's customers, oldest first, a page
// at a time: a project may have tens of thousands. find, when given, keeps
// those whose name or id holds it, case aside, so that a console finds one
// without reading them all.
func (s *Server) listCustomers(c echo.Context) error {
	limit, cursor, err := queryPage(c, defaultCustomerPage, maxCustomerPage, store.PrefixCustomer)
	if err != nil {
		return err
	}
	find := c.QueryParam("find")
	if err := checkName("find", find, false); err != nil {
		return err
	}
	cs, next, err := s.store.Customers(project(c).ID, find, cursor, limit)
	if err != nil {
		return err
	}
	out := make([]customerResponse, len(cs))
	for i := range cs {
		out[i] = customerOf(&cs[i])
	}
	return c.JSON(http.StatusOK, customerPage{Customers: out, NextCursor: next})
}

// customerPage is a page of GET /customers.
type customerPage struct {
	Customers []customerResponse `json:"customers"`
	// NextCursor, when set, is the cursor of the next page; the last page
	// has none.
	NextCursor string `json:"next_cursor,omitempty"`
}
