package ingest

import (
	"log/slog"

	"github.com/docsift/docsift/index"
	"github.com/docsift/docsift/indexes"
	"github.com/docsift/docsift/store"
)

// source is the store as the owners' indexes read it when they load or
// catch up (indexes.Source): its chunks made into the entries this
// package's stages made of them when it wrote them.
type source struct {
	store.Backend
	log *slog.Logger
}

var _ indexes.Source = source{}

// Entries reads the chunks of seqs, their documents and vectors of
// model, as entries of an index of dim.
func (s source) Entries(model string, dim int, seqs []uint64) ([]index.Entry, error) {
	chunks, err := s.ChunksBySeq(seqs)
	if err != nil {
		return nil, err
	}
	docs, err := s.DocumentsOf(chunks)
	if err != nil {
		return nil, err
	}
	idocs := indexDocuments(docs)
	titles, err := titlesOf(s.Backend, chunks)
	if err != nil {
		return nil, err
	}
	chunkSeqs := make([]uint64, len(chunks))
	for i, c := range chunks {
		chunkSeqs[i] = c.Seq
	}
	vecs, err := s.Vectors(model, chunkSeqs)
	if err != nil {
		return nil, err
	}
	entries := make([]index.Entry, 0, len(chunks))
	for i, c := range chunks {
		vec := vecs[i]
		if vec == nil {
			vec = zeroVector(dim) // written before its vector: found by its words
		}
		if len(vec) != dim {
			s.log.Warn("stored vector does not fit the index, skipped", "chunk", c.ID, "dim", len(vec), "index_dim", dim)
			continue
		}
		entries = append(entries, index.Entry{ID: c.Seq, Vector: vec, Text: c.Text, Doc: idocs[c.DocumentID], Name: docName(docs[c.DocumentID]), Title: chunkTitle(titles[c.DocumentID], c)})
	}
	return entries, nil
}

// indexDocument is what the index keeps of a document for filters.
func indexDocument(d *store.Document) *index.Document {
	return &index.Document{ID: d.ID, CreatedAt: d.CreatedAt, Metadata: d.Metadata}
}

// indexDocuments is indexDocument of each of docs, by id: one per
// document, shared by its chunks.
func indexDocuments(docs map[string]*store.Document) map[string]*index.Document {
	out := make(map[string]*index.Document, len(docs))
	for id, d := range docs {
		out[id] = indexDocument(d)
	}
	return out
}

// docName is a document's name, empty for one deleted meanwhile (nil).
func docName(d *store.Document) string {
	if d == nil {
		return ""
	}
	return d.Name
}

// entryText is what an embedder sees of a chunk: its document's name (often
// the best summary of what it is about) and its text. The lexical index
// takes the two apart, as fields of their own (index.Entry).
func entryText(docName, text string) string {
	if docName == "" {
		return text
	}
	return docName + "\n" + text
}
