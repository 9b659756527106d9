// Package admin is the data directory's unix socket, through which the
// command line reaches a running server (bbolt lets one process open the
// data file), and the operations run through it: projects, keys, reindex.
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/docsift/docsift/store"
	"github.com/docsift/docsift/store/bolt"
)

// bbolt lets one process open the data file. So that `docsift project
// create` and `docsift key …` work while a server holds it, the server also
// listens on a unix socket in the data dir, reachable only by users who can
// already read the data, and the commands talk to it. With no server
// running, they open the store themselves.

// SocketName is the admin socket's file name in the data dir.
const SocketName = "docsift.sock"

// Store is what the admin commands need; *bolt.Store is one, Client (the
// running server's socket) the other.
type Store interface {
	CreateProject(name string) (*store.Project, string, error)
	Projects() ([]store.Project, error)
	CreateKey(projectID string) (string, *store.APIKey, error)
	Keys(projectID string) ([]store.APIKey, error)
	RevokeKey(keyID string) (*store.APIKey, error)
	CreateWebhook(projectID, url string, events []string) (*store.Webhook, error)
	Webhooks(projectID string) ([]store.Webhook, error)
	DeleteWebhook(id string) error
}

// Served is what the socket serves from: the admin commands' store and
// the owners' models (a server's store.Backend).
type Served interface {
	Store
	Owners() (map[string]store.OwnerModel, error)
}

// errorReply is the socket's error shape.
type errorReply struct {
	Error string `json:"error"`
}

// CreatedKey is the answer to creating a project or a key: the only time the
// key's secret is shown.
type CreatedKey struct {
	ProjectID string `json:"project_id"`
	KeyID     string `json:"key_id,omitempty"`
	APIKey    string `json:"api_key"`
}

// Listen serves the admin API of the server that keeps st on
// dataDir/docsift.sock, to the server's user and root (see peer.go).
// checkEndpoint, when set, says whether a webhook may be registered for a
// URL (its address), as the API's does. The returned function stops it.
func Listen(dataDir string, st Served, reindexer Reindexer, checkEndpoint func(ctx context.Context, url string) error) (func(), error) {
	return listen(dataDir, handler(st, dataDir, reindexer, checkEndpoint), serverUIDs())
}

// listen serves h on dataDir/docsift.sock to the users uids.
func listen(dataDir string, h http.Handler, uids []int) (func(), error) {
	path := filepath.Join(dataDir, SocketName)
	// The store's file lock says no other server runs here, so a socket
	// file left behind is stale.
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("admin: socket: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("admin: socket: %w", err)
	}
	srv := &http.Server{Handler: onlyUsers(uids, h), ConnContext: withPeer, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return func() { srv.Close(); os.Remove(path) }, nil
}

func handler(st Served, dataDir string, reindexer Reindexer, checkEndpoint func(context.Context, string) error) http.Handler {
	var admin Store = st
	mux := http.NewServeMux()
	mux.Handle("POST /reindex", reindexHandler(reindexer))
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			status, msg := http.StatusInternalServerError, err.Error()
			switch {
			case errors.Is(err, store.ErrNotFound):
				status = http.StatusNotFound
			case store.Unavailable(err):
				status, msg = http.StatusServiceUnavailable, "the cluster's database is unreachable right now; try again in a few seconds"
			}
			w.WriteHeader(status)
			v = errorReply{Error: msg}
		}
		json.NewEncoder(w).Encode(v)
	}
	// Backup and doctor read the bbolt file and the files beside it in the
	// data dir; a store kept elsewhere has neither.
	if file, ok := st.(*bolt.Store); ok {
		mux.Handle("GET /backup", backupHandler(file, dataDir))
		mux.HandleFunc("GET /doctor", func(w http.ResponseWriter, r *http.Request) {
			reply(w, Doctor(file, dataDir, true), nil)
		})
	} else {
		elsewhere := func(w http.ResponseWriter, r *http.Request) {
			reply(w, nil, errors.New("this server keeps its records in PostgreSQL (serve --store): back them up and check them with PostgreSQL's own tools (pg_dump, a streaming replica); see docs/cluster.md"))
		}
		mux.HandleFunc("GET /backup", elsewhere)
		mux.HandleFunc("GET /doctor", elsewhere)
	}
	mux.HandleFunc("POST /projects", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Name string }
		json.NewDecoder(r.Body).Decode(&req)
		p, secret, err := admin.CreateProject(req.Name)
		if err != nil {
			reply(w, nil, err)
			return
		}
		reply(w, CreatedKey{ProjectID: p.ID, APIKey: secret}, nil)
	})
	mux.HandleFunc("GET /projects", func(w http.ResponseWriter, r *http.Request) {
		ps, err := admin.Projects()
		reply(w, ps, err)
	})
	mux.HandleFunc("POST /keys", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ ProjectID string }
		json.NewDecoder(r.Body).Decode(&req)
		secret, k, err := admin.CreateKey(req.ProjectID)
		if err != nil {
			reply(w, nil, err)
			return
		}
		reply(w, CreatedKey{ProjectID: k.ProjectID, KeyID: k.ID, APIKey: secret}, nil)
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		keys, err := admin.Keys(r.URL.Query().Get("project_id"))
		reply(w, keys, err)
	})
	mux.HandleFunc("POST /keys/revoke", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ KeyID string }
		json.NewDecoder(r.Body).Decode(&req)
		k, err := admin.RevokeKey(req.KeyID)
		reply(w, k, err)
	})
	mux.HandleFunc("POST /webhooks", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ProjectID, URL string
			Events         []string
		}
		json.NewDecoder(r.Body).Decode(&req)
		if checkEndpoint != nil {
			if err := checkEndpoint(r.Context(), req.URL); err != nil {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				json.NewEncoder(w).Encode(errorReply{Error: err.Error()})
				return
			}
		}
		wh, err := admin.CreateWebhook(req.ProjectID, req.URL, req.Events)
		reply(w, wh, err)
	})
	mux.HandleFunc("GET /webhooks", func(w http.ResponseWriter, r *http.Request) {
		ws, err := admin.Webhooks(r.URL.Query().Get("project_id"))
		reply(w, ws, err)
	})
	mux.HandleFunc("POST /webhooks/delete", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ ID string }
		json.NewDecoder(r.Body).Decode(&req)
		reply(w, struct{}{}, admin.DeleteWebhook(req.ID))
	})
	return mux
}

// notFoundError is the server's message for a store.ErrNotFound, which
// already says "not found".
type notFoundError string

func (e notFoundError) Error() string        { return string(e) }
func (e notFoundError) Is(target error) bool { return target == store.ErrNotFound }

// Client talks to a running server's admin socket.
type Client struct{ http *http.Client }

// Dial returns a client of the server running on dataDir, or an error when
// none answers there.
func Dial(dataDir string) (*Client, error) {
	path := filepath.Join(dataDir, SocketName)
	c := &Client{http: &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}},
	}}
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return nil, err
	}
	conn.Close()
	return c, nil
}

func (c *Client) call(method, path string, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, "http://docsift"+path, rd)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("admin: socket: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var e errorReply
		json.NewDecoder(resp.Body).Decode(&e)
		if e.Error == "" {
			// Not this version's reply: an older server, without the call.
			return fmt.Errorf("the server running on this data dir does not answer %s %s (HTTP %d): it may be an older docsift; restart it with this version, or stop it to run the command on the data dir", method, strings.SplitN(path, "?", 2)[0], resp.StatusCode)
		}
		if resp.StatusCode == http.StatusNotFound {
			return notFoundError(e.Error)
		}
		return errors.New(e.Error)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

func (c *Client) CreateProject(name string) (*store.Project, string, error) {
	var out CreatedKey
	err := c.call("POST", "/projects", map[string]string{"Name": name}, &out)
	return &store.Project{ID: out.ProjectID, Name: name}, out.APIKey, err
}

func (c *Client) CreateKey(projectID string) (string, *store.APIKey, error) {
	var out CreatedKey
	err := c.call("POST", "/keys", map[string]string{"ProjectID": projectID}, &out)
	return out.APIKey, &store.APIKey{ID: out.KeyID, ProjectID: out.ProjectID}, err
}

func (c *Client) Keys(projectID string) ([]store.APIKey, error) {
	var keys []store.APIKey
	err := c.call("GET", "/keys?project_id="+url.QueryEscape(projectID), nil, &keys)
	return keys, err
}

// Doctor asks the running server to check its data dir.
func (c *Client) Doctor() ([]Finding, error) {
	var out []Finding
	client := *c
	client.http = &http.Client{Transport: c.http.Transport} // reading every snapshot takes a while
	err := client.call("GET", "/doctor", nil, &out)
	return out, err
}

func (c *Client) RevokeKey(keyID string) (*store.APIKey, error) {
	var k store.APIKey
	err := c.call("POST", "/keys/revoke", map[string]string{"KeyID": keyID}, &k)
	return &k, err
}

func (c *Client) CreateWebhook(projectID, url string, events []string) (*store.Webhook, error) {
	var w store.Webhook
	err := c.call("POST", "/webhooks", map[string]any{"ProjectID": projectID, "URL": url, "Events": events}, &w)
	return &w, err
}

func (c *Client) Webhooks(projectID string) ([]store.Webhook, error) {
	var ws []store.Webhook
	err := c.call("GET", "/webhooks?project_id="+url.QueryEscape(projectID), nil, &ws)
	return ws, err
}

func (c *Client) Projects() ([]store.Project, error) {
	var ps []store.Project
	err := c.call("GET", "/projects", nil, &ps)
	return ps, err
}

func (c *Client) DeleteWebhook(id string) error {
	return c.call("POST", "/webhooks/delete", map[string]string{"ID": id}, &struct{}{})
}
