// Package store is docsift's durable state as its callers see it: the
// records (projects, keys, customers, sessions, documents, jobs, chunks
// and their vectors, subpages, webhooks and deliveries), the interfaces
// that keep them (backend.go: one a kind of record, and Backend for all),
// the errors callers map to responses, and the business rules both
// implementations apply, written once (rules.go).
//
// The implementations are its subpackages: store/bolt keeps everything in
// one bbolt file and the files beside it, for one process on one data
// dir; store/postgres keeps it in PostgreSQL, shared by the nodes of a
// cluster. store/storetest is the conformance suite both pass. The
// records' json tags name their fields as the bbolt store writes them;
// they are not an API shape (the server defines its own responses).
package store
