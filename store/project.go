package store

import (
	"strings"
	"time"
)

// Project is the unit of billing and isolation: its keys reach it and its
// customers, nothing else.
type Project struct {
	ID        string    `json:"project_id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// APIKey is a project's credential. Only the SHA-256 of the secret is kept;
// the secret itself is shown once, when the key is created.
type APIKey struct {
	ID        string     `json:"key_id"`
	ProjectID string     `json:"project_id"`
	Hint      string     `json:"hint"` // the secret's first characters, to tell keys apart
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Customer is an isolated data space inside a project (multi-tenant use).
type Customer struct {
	ID        string    `json:"customer_id"`
	ProjectID string    `json:"project_id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

// Matches reports whether c's name or id holds find, folded by FoldFind,
// case aside: how GET /customers?find= finds a customer among thousands.
func (c *Customer) Matches(find string) bool {
	return find == "" || strings.Contains(FoldFind(c.Name), find) || strings.Contains(FoldFind(c.ID), find)
}

// FoldFind is text as Customer.Matches compares it: in lower case.
func FoldFind(text string) string { return strings.ToLower(text) }
