-- Documents, their original files and the jobs that index them. The jobs
-- table is also the queue: a job is queued while due_at is set, and
-- workers claim the earliest due with FOR UPDATE SKIP LOCKED.

-- Originals, content-addressed per owner and counted by the documents that
-- refer to them, in 1 MiB pieces: written in the transaction that creates
-- the document, so no job ever sees its file missing.
CREATE TABLE files (
	owner_id text NOT NULL,
	hash     text NOT NULL,
	refs     int NOT NULL,
	PRIMARY KEY (owner_id, hash)
);
CREATE TABLE file_pieces (
	owner_id text NOT NULL,
	hash     text NOT NULL,
	n        int NOT NULL,
	data     bytea NOT NULL,
	PRIMARY KEY (owner_id, hash, n),
	FOREIGN KEY (owner_id, hash) REFERENCES files ON DELETE CASCADE
);

-- seq numbers documents in creation order (store.Document.Seq).
CREATE TABLE documents (
	id          text PRIMARY KEY,
	seq         bigserial NOT NULL UNIQUE,
	project_id  text NOT NULL,
	owner_id    text NOT NULL,
	name        text NOT NULL,
	metadata    jsonb,
	format      text NOT NULL,
	file_hash   text NOT NULL,
	size        bigint NOT NULL,
	pages       int NOT NULL DEFAULT 0,
	job_id      text NOT NULL,
	status      text NOT NULL,
	error       text NOT NULL DEFAULT '',
	chunks      int NOT NULL DEFAULT 0,
	created_at  timestamptz NOT NULL,
	updated_at  timestamptz NOT NULL,
	external_id text NOT NULL DEFAULT ''
);
CREATE INDEX documents_owner ON documents (owner_id, created_at);

-- The document holding each external id of an owner (see store/external.go).
CREATE TABLE external_ids (
	owner_id    text NOT NULL,
	external_id text NOT NULL,
	document_id text NOT NULL,
	PRIMARY KEY (owner_id, external_id)
);

-- A job outlives its document (it ends FAILED when the document goes
-- first), so document_id is not a foreign key. queue_seq orders jobs due
-- at the same time by when they were queued, as the bbolt queue does.
CREATE SEQUENCE job_queue_seq;
CREATE TABLE jobs (
	id              text PRIMARY KEY,
	project_id      text NOT NULL,
	owner_id        text NOT NULL,
	document_id     text NOT NULL,
	status          text NOT NULL,
	error           text NOT NULL DEFAULT '',
	chunks          int NOT NULL DEFAULT 0,
	chunks_embedded int NOT NULL DEFAULT 0,
	searchable_at   timestamptz,
	attempts        int NOT NULL DEFAULT 0,
	not_before      timestamptz,
	created_at      timestamptz NOT NULL,
	updated_at      timestamptz NOT NULL,
	pages_done      int, -- progress of the running attempt, NULL when none
	pages           int,
	due_at          timestamptz,
	queue_seq       bigint
);
CREATE INDEX jobs_queue ON jobs (due_at, queue_seq) WHERE due_at IS NOT NULL;
CREATE INDEX jobs_processing ON jobs (id) WHERE status = 'PROCESSING';
