-- A subpage is found by the pages it holds, not by the chunk and varience
-- that first asked for them: every request for the same pages of a
-- document shares one PDF. Its size is kept for its owner's budget. Its
-- PDF is stored uncompressed (PDFs compress their streams already), so
-- that a piece of it is read without decompressing what comes before.
ALTER TABLE subpages ADD COLUMN document_id text, ADD COLUMN size bigint;
UPDATE subpages s SET document_id = c.document_id, size = octet_length(s.data)
	FROM chunks c WHERE c.id = s.chunk_id;
DELETE FROM subpages WHERE document_id IS NULL;
ALTER TABLE subpages
	ALTER COLUMN document_id SET NOT NULL,
	ALTER COLUMN size SET NOT NULL,
	ALTER COLUMN data SET STORAGE EXTERNAL,
	DROP COLUMN chunk_id,
	DROP COLUMN varience;
CREATE INDEX subpages_document ON subpages (document_id);
CREATE INDEX subpages_project ON subpages (project_id, owner_id);

DROP TABLE subpage_cuts;
CREATE TABLE subpage_cuts (
	document_id text NOT NULL,
	first_page  int NOT NULL,
	last_page   int NOT NULL,
	subpage_id  text NOT NULL REFERENCES subpages (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
	expires_at  timestamptz NOT NULL,
	PRIMARY KEY (document_id, first_page, last_page)
);
CREATE INDEX subpage_cuts_subpage ON subpage_cuts (subpage_id);
INSERT INTO subpage_cuts (document_id, first_page, last_page, subpage_id, expires_at)
	SELECT DISTINCT ON (document_id, first_page, last_page) document_id, first_page, last_page, id, expires_at
	FROM subpages ORDER BY document_id, first_page, last_page, expires_at DESC;
