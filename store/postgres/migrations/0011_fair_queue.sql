-- The job queue is fair between projects and between a project's owners
-- (store/fairqueue.go): each has a tag, where its next job stands in the
-- queue's virtual time, and fair_clock holds how far the queue has come.
-- A claim orders the due jobs by their project's tag (at least the clock),
-- then their owner's (at least the project's clock), then by arrival.
CREATE TABLE fair_projects (
	project_id text PRIMARY KEY,
	next       bigint NOT NULL,
	clock      bigint NOT NULL DEFAULT 0
);
CREATE TABLE fair_owners (
	owner_id text PRIMARY KEY,
	next     bigint NOT NULL
);
CREATE TABLE fair_clock (
	id int PRIMARY KEY CHECK (id = 1),
	v  bigint NOT NULL
);
INSERT INTO fair_clock VALUES (1, 0);

-- When a job's latest run was claimed: what the run is charged from.
ALTER TABLE jobs ADD COLUMN started_at timestamptz;
