-- Chunks, their vectors and the model each owner's vectors come from.

-- seq is a chunk's number in one sequence across the database: the index
-- keys vectors by it and catches up by it, so it is replaced (from the same
-- sequence) when the chunk gets its vector (see store.AddVectors). text_hash
-- indexed per owner is the embedding cache: nothing else is stored for it.
-- A chunk never outlives its document, which deletes it first.
CREATE TABLE chunks (
	id           text PRIMARY KEY,
	seq          bigserial NOT NULL UNIQUE,
	document_id  text NOT NULL REFERENCES documents (id),
	owner_id     text NOT NULL,
	position     int NOT NULL,
	page         int NOT NULL,
	start_offset int NOT NULL,
	end_offset   int NOT NULL,
	text         text NOT NULL,
	text_hash    text NOT NULL,
	sections     text[]
);
CREATE INDEX chunks_document ON chunks (document_id);
CREATE INDEX chunks_owner ON chunks (owner_id, seq);
CREATE INDEX chunks_text_hash ON chunks (owner_id, text_hash);

-- Vectors as little-endian float32s, keyed by chunk sequence and model so
-- that a reindex stages another model's beside the owner's. They go with
-- their chunk; a chunk's sequence changes only once its vectors are gone.
CREATE TABLE vectors (
	seq   bigint NOT NULL REFERENCES chunks (seq) ON DELETE CASCADE,
	model text NOT NULL,
	data  bytea NOT NULL,
	PRIMARY KEY (seq, model)
);

-- store.OwnerModel. Writers of an owner's chunks or vectors hold its row
-- FOR SHARE and FinishReindex holds it FOR UPDATE, so a switch of model
-- never interleaves with a write.
CREATE TABLE owners (
	owner_id   text PRIMARY KEY,
	model      text NOT NULL,
	dim        int NOT NULL,
	next_model text NOT NULL DEFAULT ''
);
