package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/store"
)

// CreateProject creates a project and its first API key in one transaction
// and returns the key's secret, which is not stored.
func (s *Store) CreateProject(name string) (*store.Project, string, error) {
	ctx, cancel := opContext()
	defer cancel()
	p := store.NewProject(name, s.timestamp())
	var secret string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO projects (id, name, created_at) VALUES ($1, $2, $3)",
			p.ID, p.Name, p.CreatedAt); err != nil {
			return err
		}
		var err error
		secret, _, err = s.createKey(ctx, tx, p.ID)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: create project: %w", err)
	}
	return p, secret, nil
}

// Project returns a project by id.
func (s *Store) Project(id string) (*store.Project, error) {
	ctx, cancel := opContext()
	defer cancel()
	var p store.Project
	err := s.pool.QueryRow(ctx, "SELECT id, name, created_at FROM projects WHERE id = $1", id).
		Scan(&p.ID, &p.Name, &p.CreatedAt)
	if err != nil {
		return nil, notFound(err)
	}
	p.CreatedAt = p.CreatedAt.UTC()
	return &p, nil
}

// Projects returns every project, oldest first.
func (s *Store) Projects() ([]store.Project, error) {
	ctx, cancel := opContext()
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT id, name, created_at FROM projects ORDER BY created_at, id")
	if err != nil {
		return nil, fmt.Errorf("store: list projects: %w", err)
	}
	ps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Project, error) {
		var p store.Project
		err := row.Scan(&p.ID, &p.Name, &p.CreatedAt)
		p.CreatedAt = p.CreatedAt.UTC()
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: list projects: %w", err)
	}
	return ps, nil
}

// CreateKey adds an API key to a project and returns its secret.
func (s *Store) CreateKey(projectID string) (string, *store.APIKey, error) {
	ctx, cancel := opContext()
	defer cancel()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return "", nil, fmt.Errorf("store: create key: %w", err)
	}
	defer tx.Rollback(ctx)
	secret, key, err := s.createKey(ctx, tx, projectID)
	if isForeignKeyViolation(err) {
		return "", nil, fmt.Errorf("store: create key: project %s: %w", projectID, store.ErrNotFound)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return "", nil, fmt.Errorf("store: create key: %w", err)
	}
	return secret, key, nil
}

func (s *Store) createKey(ctx context.Context, tx pgx.Tx, projectID string) (string, *store.APIKey, error) {
	secret, k := store.NewAPIKey(projectID, s.timestamp())
	_, err := tx.Exec(ctx, `INSERT INTO api_keys (hash, id, project_id, hint, created_at)
		VALUES ($1, $2, $3, $4, $5)`, store.HashSecret(secret), k.ID, k.ProjectID, k.Hint, k.CreatedAt)
	return secret, k, err
}

const keyColumns = "id, project_id, hint, created_at, revoked_at"

func scanKey(row pgx.Row) (store.APIKey, error) {
	var k store.APIKey
	err := row.Scan(&k.ID, &k.ProjectID, &k.Hint, &k.CreatedAt, &k.RevokedAt)
	k.CreatedAt = k.CreatedAt.UTC()
	if k.RevokedAt != nil {
		t := k.RevokedAt.UTC()
		k.RevokedAt = &t
	}
	return k, err
}

// Keys lists a project's keys, revoked ones included, oldest first.
func (s *Store) Keys(projectID string) ([]store.APIKey, error) {
	ctx, cancel := opContext()
	defer cancel()
	var exists bool
	if err := s.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM projects WHERE id = $1)", projectID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("store: list keys: %w", err)
	}
	if !exists {
		return nil, fmt.Errorf("project %s: %w", projectID, store.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, "SELECT "+keyColumns+" FROM api_keys WHERE project_id = $1 ORDER BY created_at, id", projectID)
	if err != nil {
		return nil, fmt.Errorf("store: list keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.APIKey, error) { return scanKey(row) })
	if err != nil {
		return nil, fmt.Errorf("store: list keys: %w", err)
	}
	return keys, nil
}

// RevokeKey revokes a key by its id, and ends the upload sessions it
// created. Revoking twice is not an error.
func (s *Store) RevokeKey(keyID string) (*store.APIKey, error) {
	ctx, cancel := opContext()
	defer cancel()
	var key store.APIKey
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		key, err = scanKey(tx.QueryRow(ctx, "SELECT "+keyColumns+" FROM api_keys WHERE id = $1 FOR UPDATE", keyID))
		if err != nil {
			return notFound(err)
		}
		if key.RevokedAt != nil {
			return nil
		}
		now := s.timestamp()
		key.RevokedAt = &now
		if _, err := tx.Exec(ctx, "UPDATE api_keys SET revoked_at = $2 WHERE id = $1", keyID, now); err != nil {
			return err
		}
		// A revoked key must not live on through the upload links it
		// handed out.
		_, err = tx.Exec(ctx, "UPDATE sessions SET expires_at = $2, closed = $3 WHERE key_id = $1 AND expires_at > $2", keyID, now, store.SessionRevoked)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", keyID, err)
	}
	return &key, nil
}

// Authenticate returns the project a key secret belongs to and the key's
// id, or store.ErrNotFound for an unknown or revoked key. The lookup is by
// the secret's hash, so its timing reveals nothing about the secret.
func (s *Store) Authenticate(secret string) (*store.Project, string, error) {
	ctx, cancel := opContext()
	defer cancel()
	var p store.Project
	var keyID string
	err := s.pool.QueryRow(ctx, `SELECT k.id, p.id, p.name, p.created_at
		FROM api_keys k JOIN projects p ON p.id = k.project_id
		WHERE k.hash = $1 AND k.revoked_at IS NULL`, store.HashSecret(secret)).
		Scan(&keyID, &p.ID, &p.Name, &p.CreatedAt)
	if err != nil {
		return nil, "", notFound(err)
	}
	p.CreatedAt = p.CreatedAt.UTC()
	return &p, keyID, nil
}

// CreateCustomer registers a customer under a project. One that would
// take the project past limits.Customers is store.ErrCustomerQuota.
func (s *Store) CreateCustomer(projectID, name string, limits store.ProjectLimits) (*store.Customer, error) {
	ctx, cancel := opContext()
	defer cancel()
	c := store.NewCustomer(projectID, name, s.timestamp())
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO customers (id, project_id, name, created_at) VALUES ($1, $2, $3, $4)",
			c.ID, c.ProjectID, c.Name, c.CreatedAt); err != nil {
			return err
		}
		return addUsageWithin(ctx, tx, projectID, limits, store.ProjectUsage{Customers: 1})
	})
	if isForeignKeyViolation(err) {
		return nil, fmt.Errorf("store: create customer: project %s: %w", projectID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: create customer: %w", err)
	}
	return c, nil
}

func scanCustomer(row pgx.Row) (store.Customer, error) {
	var c store.Customer
	err := row.Scan(&c.ID, &c.ProjectID, &c.Name, &c.CreatedAt)
	c.CreatedAt = c.CreatedAt.UTC()
	return c, err
}

// Customer returns a customer by id.
func (s *Store) Customer(id string) (*store.Customer, error) {
	ctx, cancel := opContext()
	defer cancel()
	c, err := scanCustomer(s.pool.QueryRow(ctx, "SELECT id, project_id, name, created_at FROM customers WHERE id = $1", id))
	if err != nil {
		return nil, notFound(err)
	}
	return &c, nil
}

// defaultCustomersScan is how many customers a find reads from the database at a
// time: the find is made here, not in SQL, so that it folds case as the
// bbolt store's does whatever the database's locale. Tests make a store's
// (Store.customersScan) small, to find across reads.
const defaultCustomersScan = 1000

// Customers lists a project's customers that find matches, oldest first,
// limit at a time, as the bbolt store does: by id, which begins with its
// time.
func (s *Store) Customers(projectID, find, after string, limit int) ([]store.Customer, string, error) {
	if limit <= 0 {
		return nil, "", fmt.Errorf("store: list customers: limit %d, want at least 1", limit)
	}
	find = store.FoldFind(find)
	ctx, cancel := opContext()
	defer cancel()
	// One more than the page, to know whether another follows.
	var cs []store.Customer
	for len(cs) <= limit {
		batch := limit + 1 - len(cs)
		if find != "" {
			batch = s.customersScan
		}
		rows, err := s.pool.Query(ctx, `SELECT id, project_id, name, created_at FROM customers
			WHERE project_id = $1 AND id COLLATE "C" > $2
			ORDER BY id COLLATE "C" LIMIT $3`, projectID, after, batch)
		if err != nil {
			return nil, "", fmt.Errorf("store: list customers: %w", err)
		}
		read, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Customer, error) { return scanCustomer(row) })
		if err != nil {
			return nil, "", fmt.Errorf("store: list customers: %w", err)
		}
		for _, c := range read {
			if c.Matches(find) && len(cs) <= limit {
				cs = append(cs, c)
			}
		}
		if len(read) < batch {
			break
		}
		after = read[len(read)-1].ID
	}
	if len(cs) <= limit {
		return cs, "", nil
	}
	cs = cs[:limit]
	return cs, cs[limit-1].ID, nil
}

// CreateSession stores a session valid for ttl and returns its token. A
// session that would take its project past limits.Sessions alive is
// store.ErrSessionQuota.
func (s *Store) CreateSession(sess store.Session, ttl time.Duration, limits store.ProjectLimits) (*store.Session, string, error) {
	ctx, cancel := opContext()
	defer cancel()
	sess, token := store.NewSession(sess, ttl, s.timestamp())
	sess.ExpiresAt = sess.ExpiresAt.Truncate(time.Microsecond)
	services := sess.Services
	if services == nil {
		services = []string{}
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The key was good when the request came in, but a session it
		// asks for after its revocation would outlive it. Its row locked
		// for share: a revocation, which locks it to update, then either
		// came first or ends this session with the others.
		if sess.KeyID != "" {
			var revoked *time.Time
			err := tx.QueryRow(ctx, "SELECT revoked_at FROM api_keys WHERE id = $1 FOR SHARE", sess.KeyID).Scan(&revoked)
			if errors.Is(err, pgx.ErrNoRows) || err == nil && revoked != nil {
				return store.ErrKeyRevoked
			}
			if err != nil {
				return err
			}
		}
		if limits.Sessions > 0 {
			// One create at a time per project, so that two on two
			// nodes cannot both fit in the room left for one.
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('sessions ' || $1, 0))", sess.ProjectID); err != nil {
				return err
			}
			// Counted up to the limit: what is past it changes nothing.
			var u store.ProjectUsage
			var err error
			if u.Sessions, _, err = aliveSessions(ctx, tx, sess.ProjectID, sess.CreatedAt, limits.Sessions); err != nil {
				return err
			}
			if err := u.Check(limits, store.ProjectUsage{Sessions: 1}); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO sessions (token_hash, id, project_id, owner_id, customer_id,
			key_id, services, success_url, cancel_url, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			store.HashSecret(token), sess.ID, sess.ProjectID, sess.OwnerID, sess.CustomerID,
			sess.KeyID, services, sess.SuccessURL, sess.CancelURL, sess.CreatedAt, sess.ExpiresAt)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("store: create session: %w", err)
	}
	return &sess, token, nil
}

const sessionColumns = `id, project_id, owner_id, customer_id, key_id, services,
	success_url, cancel_url, created_at, expires_at, closed`

// CloseSession ends the session a token opens, as its end user left the
// page: it expires now, and says why. A session already ended stays as it
// was.
func (s *Store) CloseSession(token, how string) (*store.Session, error) {
	ctx, cancel := opContext()
	defer cancel()
	if _, err := s.pool.Exec(ctx, `UPDATE sessions SET expires_at = $2, closed = $3
		WHERE token_hash = $1 AND expires_at > $2`, store.HashSecret(token), s.timestamp(), how); err != nil {
		return nil, fmt.Errorf("store: close session: %w", err)
	}
	return s.SessionByToken(token)
}

// SessionByToken returns the session a token opens, expired or not: the
// caller decides what an expired session may still show.
func (s *Store) SessionByToken(token string) (*store.Session, error) {
	ctx, cancel := opContext()
	defer cancel()
	var sess store.Session
	err := s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE token_hash = $1`, store.HashSecret(token)).
		Scan(&sess.ID, &sess.ProjectID, &sess.OwnerID, &sess.CustomerID, &sess.KeyID, &sess.Services,
			&sess.SuccessURL, &sess.CancelURL, &sess.CreatedAt, &sess.ExpiresAt, &sess.Closed)
	if err != nil {
		return nil, notFound(err)
	}
	if len(sess.Services) == 0 {
		sess.Services = nil // as the bbolt store returns a session made without services
	}
	sess.CreatedAt = sess.CreatedAt.UTC()
	sess.ExpiresAt = sess.ExpiresAt.UTC()
	return &sess, nil
}
