package server

import (
	"errors"
	"net/http"

	"github.com/docsift/docsift/store"
	"github.com/labstack/echo/v4"
)

func (s *Server) getJob(c echo.Context) error {
	id := c.Param("job_id")
	j, err := s.store.Job(id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && j.ProjectID != project(c).ID) {
		return notFound("job %s not found", id)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

func (s *Server) listDocuments(c echo.Context) error {
	owner, err := s.ownerOf(c, c.QueryParam("owner_id"))
	if err != nil {
		return err
	}
	docs, err := s.store.Documents(owner)
	if err != nil {
		return err
	}
	if docs == nil {
		docs = []store.Document{}
	}
	return c.JSON(http.StatusOK, map[string]any{"documents": docs})
}

func (s *Server) getDocument(c echo.Context) error {
	d, err := s.documentOf(c, c.Param("document_id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}

func (s *Server) deleteDocument(c echo.Context) error {
	d, err := s.documentOf(c, c.Param("document_id"))
	if err != nil {
		return err
	}
	if err := s.engine.DeleteDocument(d); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound("document %s not found", d.ID)
		}
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"document_id": d.ID, "deleted": true})
}
