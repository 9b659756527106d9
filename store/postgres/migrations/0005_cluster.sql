-- The cluster: nodes register and heartbeat here, and a job being run is
-- leased to its node, so that a dead node's jobs are taken over by others
-- once the lease runs out. Times are the database's clock (now()), the
-- one clock every node shares.
CREATE TABLE nodes (
	id           text PRIMARY KEY,
	url          text NOT NULL,
	started_at   timestamptz NOT NULL,
	heartbeat_at timestamptz NOT NULL
);

ALTER TABLE jobs ADD COLUMN node_id text;
ALTER TABLE jobs ADD COLUMN lease_until timestamptz;
CREATE INDEX jobs_leases ON jobs (lease_until) WHERE status = 'PROCESSING';

-- The secret with which nodes mark the requests they pass to one another
-- (a query sent to the node holding its owner). Made by the first node to
-- join; one row.
CREATE TABLE cluster_secret (
	id     int PRIMARY KEY CHECK (id = 1),
	secret text NOT NULL
);
