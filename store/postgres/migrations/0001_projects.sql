-- Projects, their API keys and customers, and upload sessions: the records
-- behind authentication. Times are stored to the microsecond.

CREATE TABLE projects (
	id         text PRIMARY KEY,
	name       text NOT NULL,
	created_at timestamptz NOT NULL
);

-- Only the SHA-256 of a key's secret is kept, as in the bbolt store.
CREATE TABLE api_keys (
	hash       text PRIMARY KEY,
	id         text NOT NULL UNIQUE,
	project_id text NOT NULL REFERENCES projects (id),
	hint       text NOT NULL,
	created_at timestamptz NOT NULL,
	revoked_at timestamptz
);
CREATE INDEX api_keys_project ON api_keys (project_id, created_at);

CREATE TABLE customers (
	id         text PRIMARY KEY,
	project_id text NOT NULL REFERENCES projects (id),
	name       text NOT NULL,
	created_at timestamptz NOT NULL
);
CREATE INDEX customers_project ON customers (project_id, created_at);

-- Sessions name their project without a foreign key: the bbolt store does
-- not check it either, and the two must behave alike.
CREATE TABLE sessions (
	token_hash  text PRIMARY KEY,
	id          text NOT NULL UNIQUE,
	project_id  text NOT NULL,
	owner_id    text NOT NULL,
	customer_id text NOT NULL DEFAULT '',
	key_id      text NOT NULL DEFAULT '',
	services    text[] NOT NULL,
	success_url text NOT NULL,
	cancel_url  text NOT NULL,
	created_at  timestamptz NOT NULL,
	expires_at  timestamptz NOT NULL
);
CREATE INDEX sessions_key ON sessions (key_id) WHERE key_id <> '';
