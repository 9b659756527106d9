-- How many runs of a job the server (or its node) stopped while they were
-- under way (store.Job.Interrupted): past a few, the job fails for good.
ALTER TABLE jobs ADD COLUMN interrupted integer NOT NULL DEFAULT 0;
