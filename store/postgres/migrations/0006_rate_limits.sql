-- Token buckets of the rate limits, shared by the nodes of a cluster so
-- that a client's limit holds whichever node its requests land on.
-- tokens is the bucket's content at time at.
CREATE UNLOGGED TABLE rate_buckets (
	key    text PRIMARY KEY,
	tokens double precision NOT NULL,
	at     timestamptz NOT NULL
);
