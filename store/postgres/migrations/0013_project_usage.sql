-- What each project keeps against its quotas (see store/quotas.go),
-- counted in the transactions that change it: customers, documents (the
-- project's and its customers', whatever their status) and their sizes,
-- each document's in full even when its content is stored once for
-- several. A project's row is locked by whoever changes it until they
-- commit, so that two creates at the edge of a quota go one after the
-- other. Filled here from the rows there are, afresh should this run
-- again over a schema rewound to before it (as tests of older migrations
-- do).
CREATE TABLE IF NOT EXISTS project_usage (
	project_id   text PRIMARY KEY,
	customers    bigint NOT NULL DEFAULT 0,
	documents    bigint NOT NULL DEFAULT 0,
	stored_bytes bigint NOT NULL DEFAULT 0
);
DELETE FROM project_usage;
INSERT INTO project_usage (project_id, customers, documents, stored_bytes)
	SELECT project_id, sum(customers), sum(documents), sum(stored_bytes) FROM (
		SELECT project_id, count(*) AS customers, 0 AS documents, 0 AS stored_bytes
			FROM customers GROUP BY project_id
		UNION ALL
		SELECT project_id, 0, count(*), sum(size) FROM documents GROUP BY project_id
	) counted GROUP BY project_id;

-- A project's sessions alive are counted from their expiry, which passes
-- without a write; the sweep finds the ended ones by it.
CREATE INDEX IF NOT EXISTS sessions_project_expiry ON sessions (project_id, expires_at);
CREATE INDEX IF NOT EXISTS sessions_expiry ON sessions (expires_at);
