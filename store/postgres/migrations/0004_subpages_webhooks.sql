-- Subpages (small PDFs cut around a chunk's page, served by whichever node
-- is asked), webhooks, and the deliveries of their events.

-- A subpage's PDF is kept in its row: subpages are small, and every node
-- must be able to serve one.
CREATE TABLE subpages (
	id         text PRIMARY KEY,
	project_id text NOT NULL,
	owner_id   text NOT NULL,
	chunk_id   text NOT NULL,
	varience   int NOT NULL,
	first_page int NOT NULL,
	last_page  int NOT NULL,
	file_name  text NOT NULL,
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL,
	data       bytea NOT NULL
);
CREATE INDEX subpages_expiry ON subpages (expires_at);

-- The subpage that the same chunk and varience reuse, one per cut. Its
-- expires_at is the subpage's, copied here so that a creator racing
-- another can decide in one INSERT … ON CONFLICT whether the cut is free.
CREATE TABLE subpage_cuts (
	chunk_id   text NOT NULL,
	varience   int NOT NULL,
	subpage_id text NOT NULL REFERENCES subpages (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (chunk_id, varience)
);
CREATE INDEX subpage_cuts_subpage ON subpage_cuts (subpage_id);

-- events NULL is kept apart from an empty list, as the bbolt store keeps
-- them apart.
CREATE TABLE webhooks (
	id         text PRIMARY KEY,
	project_id text NOT NULL REFERENCES projects (id),
	url        text NOT NULL,
	events     text[],
	secret     text NOT NULL,
	created_at timestamptz NOT NULL
);
CREATE INDEX webhooks_project ON webhooks (project_id, created_at);

-- The deliveries table is also the outbox: a delivery is queued while
-- due_at is set (its next attempt, or its lease's end while claimed_by
-- names the node sending it). queue_seq orders deliveries due at the same
-- time by when they were queued, as the bbolt outbox does.
CREATE SEQUENCE delivery_queue_seq;
CREATE TABLE deliveries (
	id           text PRIMARY KEY,
	webhook_id   text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
	event        jsonb NOT NULL,
	status       text NOT NULL,
	attempts     int NOT NULL DEFAULT 0,
	last_status  int NOT NULL DEFAULT 0,
	last_error   text NOT NULL DEFAULT '',
	created_at   timestamptz NOT NULL,
	delivered_at timestamptz,
	due_at       timestamptz,
	queue_seq    bigint,
	claimed_by   text
);
CREATE INDEX deliveries_queue ON deliveries (due_at, queue_seq) WHERE due_at IS NOT NULL;
CREATE INDEX deliveries_log ON deliveries (webhook_id, created_at, id);
