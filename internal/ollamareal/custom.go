package ollamareal

import "context"

// Bert returns a BERT embedding model of the caller's sizes, run on one
// thread like the tiny models: for a test that needs a second embedding
// model, e.g. one of another dimension.
func Bert(name string, s BertSpec) Model { return bertModel(name, s, tinyParameters) }

// Create creates m on s now, whether or not this process created a model
// of its name before: creating another model under a name replaces the
// one there, as a user's `ollama create` or `ollama pull` of a newer
// version does.
func (s *Server) Create(ctx context.Context, m Model) error { return createModel(ctx, s.Client(), m) }
