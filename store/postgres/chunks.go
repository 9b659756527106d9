package postgres

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/docsift/docsift/store"
)

// Chunks are rows keyed by id (store.ChunkID: document and position) with a
// sequence from one PostgreSQL sequence, chunks_seq_seq, so sequences grow
// across the database and a node catches up on an owner by reading the
// sequences above the last it saw (docs/cluster.md). Vectors are rows of
// their own keyed by (seq, model); the embedding cache is the index on
// (owner_id, text_hash) (see embedcache.go).
//
// Every writer takes its locks in one order, so that no two deadlock: the
// document's external id (lockExternalID), its job, the document, then the
// owner's model row (claimOwnerModel, ownerRowLock).

const chunkColumns = `id, seq, document_id, owner_id, position, page, start_offset, end_offset,
	text, text_hash, sections`

var chunkCopyColumns = []string{"id", "seq", "document_id", "owner_id", "position", "page",
	"start_offset", "end_offset", "text", "text_hash", "sections"}

func scanChunk(row pgx.Row) (store.Chunk, error) {
	var c store.Chunk
	var seq int64
	err := row.Scan(&c.ID, &seq, &c.DocumentID, &c.OwnerID, &c.Position, &c.Page, &c.Start, &c.End,
		&c.Text, &c.TextHash, &c.Sections)
	c.Seq = uint64(seq)
	return c, err
}

// ReplaceChunks writes a document's chunks and their vectors, embedded by
// model, in one transaction, replacing whatever a previous run wrote, and
// assigns each chunk its Seq. It returns the sequences of the replaced
// chunks, and of the document whose external id this one took over, as
// bolt.Store.ReplaceChunks does; vectors[i] may be nil for a chunk whose
// vector comes later through AddVectors.
func (s *Store) ReplaceChunks(documentID, model string, chunks []store.Chunk, vectors [][]float32) ([]uint64, error) {
	if len(chunks) != len(vectors) {
		return nil, fmt.Errorf("store: replace chunks: %d chunks but %d vectors", len(chunks), len(vectors))
	}
	embedded, dim := 0, 0
	for _, v := range vectors {
		if v != nil {
			embedded, dim = embedded+1, len(v)
		}
	}
	ctx, cancel := opContext()
	defer cancel()
	var removed, replaced []uint64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		removed, replaced = nil, nil
		d, err := lockDocument(ctx, tx, documentID)
		if err != nil {
			return err
		}
		if embedded == len(chunks) {
			if replaced, err = s.takeOverExternalID(ctx, tx, d); err != nil {
				return err
			}
		} else if _, err := otherHolder(ctx, tx, d); err != nil {
			return err
		}
		if embedded > 0 {
			if err := claimOwnerModel(ctx, tx, d.OwnerID, model, dim); err != nil {
				return err
			}
		}
		if removed, err = deleteChunks(ctx, tx, d); err != nil {
			return err
		}
		seqs, err := nextSeqs(ctx, tx, len(chunks))
		if err != nil {
			return err
		}
		rows := make([][]any, len(chunks))
		var vecSeqs []int64
		var vecs [][]float32
		for i := range chunks {
			c := &chunks[i]
			c.ID, c.Seq, c.DocumentID, c.OwnerID = store.ChunkID(d.ID, c.Position), uint64(seqs[i]), d.ID, d.OwnerID
			rows[i] = chunkRow(c)
			if vectors[i] != nil {
				vecSeqs, vecs = append(vecSeqs, seqs[i]), append(vecs, vectors[i])
			}
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"chunks"}, chunkCopyColumns, pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("write chunks: %w", err)
		}
		if err := writeVectors(ctx, tx, model, vecSeqs, vecs); err != nil {
			return err
		}
		if err := s.setJobChunks(ctx, tx, d.JobID, len(chunks), embedded); err != nil {
			return err
		}
		return s.notifyChunks(ctx, tx, d.OwnerID)
	})
	if err != nil {
		return nil, fmt.Errorf("store: replace chunks of %s: %w", documentID, err)
	}
	return append(removed, replaced...), nil
}

// chunkRow is c as a row of chunkCopyColumns. No sections are NULL, read
// back as nil, as the bbolt store's records omit them.
func chunkRow(c *store.Chunk) []any {
	var sections []string
	for _, sec := range c.Sections {
		sections = append(sections, pgText(sec))
	}
	return []any{c.ID, int64(c.Seq), c.DocumentID, c.OwnerID, c.Position, c.Page, c.Start, c.End,
		pgText(c.Text), c.TextHash, sections}
}

// pgText is s as a PostgreSQL text value can hold it: valid UTF-8 without
// NUL characters. Extracted text may have either (a PDF's broken font
// tables); bbolt keeps bytes as they come, so only this store drops them,
// and nothing searchable is lost with them.
func pgText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "")
}

// nextSeqs takes n chunk sequences, ascending.
func nextSeqs(ctx context.Context, tx pgx.Tx, n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	rows, err := tx.Query(ctx, "SELECT nextval('chunks_seq_seq') FROM generate_series(1, $1)", n)
	if err != nil {
		return nil, fmt.Errorf("number chunks: %w", err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("number chunks: %w", err)
	}
	slices.Sort(seqs)
	return seqs, nil
}

// writeVectors writes vectors[i] of model for chunk sequence seqs[i].
func writeVectors(ctx context.Context, tx pgx.Tx, model string, seqs []int64, vectors [][]float32) error {
	if len(seqs) == 0 {
		return nil
	}
	rows := make([][]any, len(seqs))
	for i, seq := range seqs {
		rows[i] = []any{seq, model, store.EncodeVector(vectors[i])}
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"vectors"}, []string{"seq", "model", "data"}, pgx.CopyFromRows(rows)); err != nil {
		return fmt.Errorf("write vectors: %w", err)
	}
	return nil
}

// setJobChunks records in a document's job how many chunks it has written
// and how many of them have vectors, in the transaction that wrote them.
// As on bbolt, it leaves the job's updated_at alone.
func (s *Store) setJobChunks(ctx context.Context, tx pgx.Tx, jobID string, chunks, embedded int) error {
	_, err := tx.Exec(ctx, `UPDATE jobs SET chunks = $2, chunks_embedded = $3,
		searchable_at = coalesce(searchable_at, $4) WHERE id = $1`, jobID, chunks, embedded, s.timestamp())
	return err
}

// AddVectors gives chunks of a document written without vectors their
// vectors of model, in one transaction: vectors[i] is that of the chunk
// with sequence seqs[i]. As bolt.Store.AddVectors, each such chunk gets a
// new sequence (0 in newSeqs for a chunk that is gone or already had a
// vector), removed lists the old sequences and those of a document whose
// external id this one took over, and complete reports that every chunk
// of the document now has a vector.
func (s *Store) AddVectors(documentID, model string, seqs []uint64, vectors [][]float32) (newSeqs, removed []uint64, complete bool, err error) {
	if len(seqs) != len(vectors) {
		return nil, nil, false, fmt.Errorf("store: add vectors: %d chunks but %d vectors", len(seqs), len(vectors))
	}
	ctx, cancel := opContext()
	defer cancel()
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		newSeqs, removed = make([]uint64, len(seqs)), nil
		d, err := lockDocument(ctx, tx, documentID)
		if err != nil {
			return err
		}
		if len(vectors) > 0 {
			if err := claimOwnerModel(ctx, tx, d.OwnerID, model, len(vectors[0])); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT seq FROM chunks c WHERE document_id = $1 AND seq = ANY($2)
			AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.seq = c.seq AND v.model = $3) FOR UPDATE OF c`,
			documentID, toInt64s(seqs), model)
		if err != nil {
			return err
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		waiting := make(map[int64]bool, len(found))
		for _, seq := range found {
			waiting[seq] = true
		}
		// In seqs' order, each chunk once, as the bbolt store goes.
		var at []int
		var old []int64
		for i, seq := range seqs {
			if waiting[int64(seq)] {
				delete(waiting, int64(seq))
				at, old = append(at, i), append(old, int64(seq))
			}
		}
		if len(old) > 0 {
			fresh, err := nextSeqs(ctx, tx, len(old))
			if err != nil {
				return err
			}
			// A reindex may have staged another model's vector for the old
			// sequence: it goes with it, as the chunk's content changed.
			if _, err := tx.Exec(ctx, "DELETE FROM vectors WHERE seq = ANY($1)", old); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE chunks SET seq = u.fresh
				FROM unnest($1::bigint[], $2::bigint[]) AS u(old, fresh) WHERE chunks.seq = u.old`, old, fresh); err != nil {
				return err
			}
			vecs := make([][]float32, len(at))
			for k, i := range at {
				vecs[k], newSeqs[i] = vectors[i], uint64(fresh[k])
				removed = append(removed, uint64(old[k]))
			}
			if err := writeVectors(ctx, tx, model, fresh, vecs); err != nil {
				return err
			}
		}
		var total, embedded int
		if err := tx.QueryRow(ctx, `SELECT count(*), count(v.seq) FROM chunks c
			LEFT JOIN vectors v ON v.seq = c.seq AND v.model = $2 WHERE c.document_id = $1`,
			documentID, model).Scan(&total, &embedded); err != nil {
			return err
		}
		if complete = embedded == total; complete {
			replaced, err := s.takeOverExternalID(ctx, tx, d)
			if err != nil {
				return err
			}
			removed = append(removed, replaced...)
		}
		if err := s.setJobChunks(ctx, tx, d.JobID, total, embedded); err != nil {
			return err
		}
		if len(removed) == 0 {
			return nil
		}
		return s.notifyChunks(ctx, tx, d.OwnerID)
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: add vectors to %s: %w", documentID, err)
	}
	return newSeqs, removed, complete, nil
}

// DeleteChunks removes a document's chunks, their vectors and cache
// entries, keeping the document, and returns their sequences. A deleted
// document is store.ErrNotFound.
func (s *Store) DeleteChunks(documentID string) ([]uint64, error) {
	ctx, cancel := opContext()
	defer cancel()
	var removed []uint64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		d, err := lockDocument(ctx, tx, documentID)
		if err != nil {
			return err
		}
		if removed, err = deleteChunks(ctx, tx, d); err != nil || len(removed) == 0 {
			return err
		}
		return s.notifyChunks(ctx, tx, d.OwnerID)
	})
	if err != nil {
		return nil, fmt.Errorf("store: delete chunks of %s: %w", documentID, err)
	}
	return removed, nil
}

// deleteChunks removes every chunk of d, and with them their vectors and
// cache entries. It returns their sequences in the order of the chunks'
// ids, as the bbolt store does.
func deleteChunks(ctx context.Context, tx pgx.Tx, d *store.Document) ([]uint64, error) {
	if err := ownerRowLock(ctx, tx, d.OwnerID); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, "DELETE FROM chunks WHERE document_id = $1 RETURNING id, seq", d.ID)
	if err != nil {
		return nil, fmt.Errorf("delete chunks: %w", err)
	}
	type idSeq struct {
		id  string
		seq int64
	}
	gone, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (idSeq, error) {
		var c idSeq
		return c, row.Scan(&c.id, &c.seq)
	})
	if err != nil {
		return nil, fmt.Errorf("delete chunks: %w", err)
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].id < gone[j].id })
	var seqs []uint64
	for _, c := range gone {
		seqs = append(seqs, uint64(c.seq))
	}
	return seqs, nil
}

// Chunk returns a chunk by id.
func (s *Store) Chunk(id string) (*store.Chunk, error) {
	ctx, cancel := opContext()
	defer cancel()
	c, err := scanChunk(s.pool.QueryRow(ctx, "SELECT "+chunkColumns+" FROM chunks WHERE id = $1", id))
	if err != nil {
		return nil, notFound(err)
	}
	return &c, nil
}

// ChunksBySeq returns the chunks with the given sequences, in that order,
// skipping any that no longer exist. It reads them in one query.
func (s *Store) ChunksBySeq(seqs []uint64) ([]store.Chunk, error) {
	ctx, cancel := opContext()
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT "+chunkColumns+" FROM chunks WHERE seq = ANY($1)", toInt64s(seqs))
	if err != nil {
		return nil, fmt.Errorf("store: read chunks: %w", err)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Chunk, error) { return scanChunk(row) })
	if err != nil {
		return nil, fmt.Errorf("store: read chunks: %w", err)
	}
	bySeq := make(map[uint64]store.Chunk, len(found))
	for _, c := range found {
		bySeq[c.Seq] = c
	}
	out := make([]store.Chunk, 0, len(seqs))
	for _, seq := range seqs {
		if c, ok := bySeq[seq]; ok {
			out = append(out, c)
		}
	}
	return out, nil
}

// OwnerSeqs returns the sequences of every chunk an owner has, ascending.
func (s *Store) OwnerSeqs(ownerID string) ([]uint64, error) {
	ctx, cancel := opContext()
	defer cancel()
	seqs, err := collectSeqs(s.pool.Query(ctx, "SELECT seq FROM chunks WHERE owner_id = $1 ORDER BY seq", ownerID))
	if err != nil {
		return nil, fmt.Errorf("store: chunks of %s: %w", ownerID, err)
	}
	return seqs, nil
}

// collectSeqs reads a query's one bigint column as sequences, nil for none.
func collectSeqs(rows pgx.Rows, err error) ([]uint64, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var seqs []uint64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			return nil, err
		}
		seqs = append(seqs, uint64(seq))
	}
	return seqs, rows.Err()
}

// Vector returns the vector model made of a chunk, or store.ErrNotFound.
func (s *Store) Vector(model string, seq uint64) ([]float32, error) {
	ctx, cancel := opContext()
	defer cancel()
	var data []byte
	if err := s.pool.QueryRow(ctx, "SELECT data FROM vectors WHERE seq = $1 AND model = $2",
		int64(seq), model).Scan(&data); err != nil {
		return nil, notFound(err)
	}
	return store.DecodeVector(data), nil
}

// Vectors returns the vectors of the chunks seqs under model, in order,
// with nil for a chunk that has none, in one query.
func (s *Store) Vectors(model string, seqs []uint64) ([][]float32, error) {
	ctx, cancel := opContext()
	defer cancel()
	at := make(map[int64][]int, len(seqs)) // where each seq was asked for
	keys := make([]int64, len(seqs))
	for i, seq := range seqs {
		at[int64(seq)], keys[i] = append(at[int64(seq)], i), int64(seq)
	}
	rows, err := s.pool.Query(ctx, "SELECT seq, data FROM vectors WHERE model = $1 AND seq = ANY($2)", model, keys)
	if err != nil {
		return nil, fmt.Errorf("store: vectors: %w", err)
	}
	defer rows.Close()
	out := make([][]float32, len(seqs))
	for rows.Next() {
		var seq int64
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return nil, fmt.Errorf("store: vectors: %w", err)
		}
		v := store.DecodeVector(data)
		for _, i := range at[seq] {
			out[i] = v
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: vectors: %w", err)
	}
	return out, nil
}

// toInt64s converts sequences to PostgreSQL's bigint.
func toInt64s(seqs []uint64) []int64 {
	out := make([]int64, len(seqs))
	for i, s := range seqs {
		out[i] = int64(s)
	}
	return out
}

// DocumentNames returns the name of every document chunks come from, by
// document id, read in one query. A document deleted meanwhile has no
// entry.
func (s *Store) DocumentNames(chunks []store.Chunk) (map[string]string, error) {
	ctx, cancel := opContext()
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT id, name FROM documents WHERE id = ANY($1)", documentIDs(chunks))
	if err != nil {
		return nil, fmt.Errorf("store: read document names: %w", err)
	}
	defer rows.Close()
	names := make(map[string]string)
	for rows.Next() {
		var id, name string
		if err := rows.Scan(&id, &name); err != nil {
			return nil, fmt.Errorf("store: read document names: %w", err)
		}
		names[id] = name
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read document names: %w", err)
	}
	return names, nil
}

// DocumentsOf returns the document of every chunk, by document id, read in
// one query. A document deleted meanwhile has no entry.
func (s *Store) DocumentsOf(chunks []store.Chunk) (map[string]*store.Document, error) {
	ctx, cancel := opContext()
	defer cancel()
	rows, err := s.pool.Query(ctx, "SELECT "+docColumns+" FROM documents WHERE id = ANY($1)", documentIDs(chunks))
	if err != nil {
		return nil, fmt.Errorf("store: read documents of chunks: %w", err)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*store.Document, error) { return scanDoc(row) })
	if err != nil {
		return nil, fmt.Errorf("store: read documents of chunks: %w", err)
	}
	docs := make(map[string]*store.Document, len(found))
	for _, d := range found {
		docs[d.ID] = d
	}
	return docs, nil
}

// documentIDs lists the documents chunks come from, each once.
func documentIDs(chunks []store.Chunk) []string {
	ids := make([]string, 0, len(chunks))
	seen := make(map[string]bool, len(chunks))
	for _, c := range chunks {
		if !seen[c.DocumentID] {
			seen[c.DocumentID] = true
			ids = append(ids, c.DocumentID)
		}
	}
	return ids
}
