-- How an end user left a session's page (store.Session.Closed): "done" or
-- "cancelled", which ended the session; empty while it is open.
ALTER TABLE sessions ADD COLUMN closed text NOT NULL DEFAULT '';
