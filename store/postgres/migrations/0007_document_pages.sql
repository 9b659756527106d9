-- An owner's documents are listed a page at a time in the order of their
-- ids, which begin with their creation time (store.Documents); "C" orders
-- them byte by byte as the bbolt store does, whatever the database's
-- collation. A session's uploads are found by the session_id in their
-- metadata (store.SessionDocuments), without reading the owner's others.
DROP INDEX documents_owner;
CREATE INDEX documents_owner ON documents (owner_id, id COLLATE "C");
CREATE INDEX documents_session ON documents ((metadata->>'session_id'), id COLLATE "C")
	WHERE metadata ? 'session_id';
