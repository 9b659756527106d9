package ollamatest

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/ollama/ollama/api"
)

const (
	// chatModelDim is the dimension a chat model's embeddings have here:
	// Ollama embeds with any model, not only embedding models.
	chatModelDim = 64

	// chatPieceRunes is the size of one streamed chat piece: small, so that
	// tags and words are split across pieces as a real model's tokens split
	// them.
	chatPieceRunes = 3

	// DefaultReply is the chat answer unless SetReply changes it.
	DefaultReply = "The sources answer the question [1]."

	// pullTotal is the size of the single layer a pull pretends to fetch.
	pullTotal = 1000
)

func (s *Server) handleTags(w http.ResponseWriter) {
	s.mu.Lock()
	var list []api.ListModelResponse
	for _, m := range s.models {
		list = append(list, api.ListModelResponse{
			Name:       m.Name,
			Model:      m.Name,
			ModifiedAt: time.Now().UTC(),
			Size:       int64(1 << 20),
			Digest:     m.digest(),
			Details:    details(m),
		})
	}
	s.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	writeJSON(w, http.StatusOK, api.ListResponse{Models: list})
}

func (s *Server) handleShow(w http.ResponseWriter, r *http.Request) {
	var req api.ShowRequest
	if !decode(w, r, &req) {
		return
	}
	name := modelName(req.Model, req.Name) //nolint:staticcheck // older clients still send the deprecated field
	if name == "" {
		writeError(w, http.StatusBadRequest, "model is required")
		return
	}
	m, ok := s.lookup(name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found", name))
		return
	}
	d := details(m)
	dim, capability := chatModelDim, "completion"
	if m.Dim > 0 {
		dim, capability = m.Dim, "embedding"
	}
	// Written as a map: the response's capability type lives in a package
	// of Ollama's that docsift does not otherwise need.
	resp := map[string]any{
		"details": d,
		"model_info": map[string]any{
			"general.architecture":         d.Family,
			d.Family + ".embedding_length": dim,
			d.Family + ".context_length":   m.context(),
		},
		"capabilities": []string{capability},
		"modified_at":  time.Now().UTC(),
	}
	if m.NumCtx > 0 {
		// The Modelfile's parameters, one "name value" a line, as the real
		// server lists them.
		resp["parameters"] = fmt.Sprintf("num_ctx                        %d", m.NumCtx)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleEmbed(w http.ResponseWriter, r *http.Request) {
	var req api.EmbedRequest
	if !decode(w, r, &req) {
		return
	}
	var input []string
	switch in := req.Input.(type) {
	case nil:
	case string:
		if in != "" {
			input = []string{in}
		}
	case []any:
		for _, v := range in {
			str, ok := v.(string)
			if !ok {
				writeError(w, http.StatusBadRequest, "invalid input type")
				return
			}
			input = append(input, str)
		}
	default:
		writeError(w, http.StatusBadRequest, "invalid input type")
		return
	}
	m, ok := s.lookup(req.Model)
	if !ok {
		// Not the text /api/show and /api/chat give: the real server words
		// this one differently.
		writeError(w, http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", req.Model))
		return
	}
	s.mu.Lock()
	s.embeds = append(s.embeds, req)
	scale := s.scale
	s.mu.Unlock()

	dim := m.Dim
	if dim == 0 {
		dim = chatModelDim
	}
	// The real server truncates at the smaller of the model's context and
	// num_ctx: the request's, else the Modelfile's. It truncates unless
	// told not to.
	ctx := m.context()
	if n := intOption(req.Options, "num_ctx"); n > 0 {
		ctx = min(ctx, n)
	} else if m.NumCtx > 0 {
		ctx = min(ctx, m.NumCtx)
	}
	truncate := req.Truncate == nil || *req.Truncate
	vecs := make([][]float32, len(input))
	count := 0
	for i, text := range input {
		kept, n, ok := truncateEmbedInput(text, ctx, truncate)
		if !ok {
			writeError(w, http.StatusBadRequest, errOverContext)
			return
		}
		count += n
		vecs[i] = Embedding(kept, dim)
		for j := range vecs[i] {
			vecs[i][j] *= scale
		}
	}
	writeJSON(w, http.StatusOK, api.EmbedResponse{
		Model:         req.Model,
		Embeddings:    vecs,
		TotalDuration: time.Millisecond,
		// A token count, [CLS] and [SEP] included, summed over the inputs.
		PromptEvalCount: count,
	})
}

// Embedding is the stand-in's vector for text: each lower-cased word hashed
// to a signed coordinate, then unit-normalized. Texts sharing words are
// close, so retrieval through the stand-in behaves sensibly in tests.
func Embedding(text string, dim int) []float32 {
	v := make([]float32, dim)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(words) == 0 {
		words = []string{text}
	}
	for _, w := range words {
		h := fnv.New64a()
		h.Write([]byte(w))
		sum := h.Sum64()
		sign := float32(1)
		if sum>>63 == 1 {
			sign = -1
		}
		v[sum%uint64(dim)] += sign
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm > 0 {
		inv := float32(1 / math.Sqrt(norm))
		for i := range v {
			v[i] *= inv
		}
	}
	return v
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	var req api.ChatRequest
	if !decode(w, r, &req) {
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "model is required")
		return
	}
	m, ok := s.lookup(req.Model)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("model '%s' not found", req.Model))
		return
	}
	if m.Dim > 0 {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q does not support chat", req.Model))
		return
	}
	s.mu.Lock()
	s.chats = append(s.chats, req)
	reply, think, truncate, chatErr := s.reply, s.think, s.truncate, s.chatErr
	stallAfter, stall := s.stallAfter, s.stall
	s.mu.Unlock()
	if req.Think != nil && req.Think.Bool() && think == "" {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%q does not support thinking", req.Model))
		return
	}

	text := DefaultReply
	if reply != nil {
		text = reply(&req)
	}
	if think != "" {
		text = "<think>" + think + "</think>\n\n" + text
	}

	// One piece stands for one generated token. Like the real server, the
	// answer stops at num_predict tokens with done_reason "length", and a
	// prompt longer than num_ctx is truncated silently: prompt_eval_count is at
	// most num_ctx.
	pieces := split(text, chatPieceRunes)
	doneReason := "stop"
	if n := intOption(req.Options, "num_predict"); n > 0 && len(pieces) > n {
		pieces, doneReason = pieces[:n], "length"
	}
	numCtx := intOption(req.Options, "num_ctx")
	if numCtx <= 0 {
		numCtx = defaultChatNumCtx
	}
	prompt := msgOverhead
	for _, msg := range req.Messages {
		prompt += len(tokens(msg.Content)) + msgOverhead
	}

	final := api.ChatResponse{
		Model:      req.Model,
		CreatedAt:  time.Now().UTC(),
		Message:    api.Message{Role: "assistant"},
		Done:       true,
		DoneReason: doneReason,
		Metrics: api.Metrics{
			TotalDuration:   time.Millisecond,
			PromptEvalCount: min(prompt, numCtx),
			EvalCount:       len(pieces),
		},
	}
	if req.Stream != nil && !*req.Stream {
		final.Message.Content = strings.Join(pieces, "")
		writeJSON(w, http.StatusOK, final)
		return
	}

	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	if truncate || chatErr != "" {
		pieces = pieces[:len(pieces)/2]
	}
	for i, p := range pieces {
		if i == stallAfter && stall != nil {
			select {
			case <-stall:
			case <-r.Context().Done():
			}
		}
		if r.Context().Err() != nil {
			s.mu.Lock()
			s.leftMidway++
			s.mu.Unlock()
			return
		}
		writeLine(w, api.ChatResponse{
			Model:     req.Model,
			CreatedAt: time.Now().UTC(),
			Message:   api.Message{Role: "assistant", Content: p},
		})
	}
	switch {
	case chatErr != "":
		writeLine(w, map[string]string{"error": chatErr})
	case !truncate:
		writeLine(w, final)
	}
	s.mu.Lock()
	s.whole++
	s.mu.Unlock()
}

func (s *Server) handlePull(w http.ResponseWriter, r *http.Request) {
	var req api.PullRequest
	if !decode(w, r, &req) {
		return
	}
	name := modelName(req.Model, req.Name) //nolint:staticcheck // older clients still send the deprecated field
	s.mu.Lock()
	m, ok := s.library[key(name)]
	s.mu.Unlock()
	if !ok {
		const msg = "pull model manifest: file does not exist"
		if req.Stream != nil && !*req.Stream {
			writeError(w, http.StatusInternalServerError, msg)
			return
		}
		// The real server has already answered 200 with its first progress
		// line when the registry says no, so the error is a line of the
		// stream, which Ollama's client returns as a plain error, not a
		// StatusError.
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
		writeLine(w, api.ProgressResponse{Status: "pulling manifest"})
		writeLine(w, map[string]string{"error": msg})
		return
	}
	d := "sha256:" + digest(m.Name) // pull progress names the layer with its algorithm
	steps := []api.ProgressResponse{{Status: "pulling manifest"}}
	for c := int64(0); c <= pullTotal; c += pullTotal / 4 {
		steps = append(steps, api.ProgressResponse{Status: "pulling " + d[7:19], Digest: d, Total: pullTotal, Completed: c})
	}
	steps = append(steps,
		api.ProgressResponse{Status: "verifying sha256 digest"},
		api.ProgressResponse{Status: "writing manifest"},
		api.ProgressResponse{Status: "success"},
	)
	s.AddModel(m)
	if req.Stream != nil && !*req.Stream {
		writeJSON(w, http.StatusOK, api.ProgressResponse{Status: "success"})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	for _, p := range steps {
		if r.Context().Err() != nil {
			return
		}
		writeLine(w, p)
	}
}

// writeLine writes one NDJSON line and flushes it, as Ollama streams.
func writeLine(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Write(append(b, '\n'))
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// split breaks s into pieces of n runes.
func split(s string, n int) []string {
	var out []string
	runes := []rune(s)
	for len(runes) > 0 {
		k := min(n, len(runes))
		out = append(out, string(runes[:k]))
		runes = runes[k:]
	}
	return out
}

// digest is a stand-in digest for name: 64 hex digits, without the
// "sha256:" that /api/tags, like the real server's, leaves out.
func digest(name string) string {
	h := fnv.New64a()
	h.Write([]byte(name))
	return fmt.Sprintf("%016x%048x", h.Sum64(), 0)
}

// digest is the model's digest: its own, or one that changes with what
// the model is.
func (m Model) digest() string {
	if m.Digest != "" {
		return m.Digest
	}
	return digest(fmt.Sprintf("%s/%d/%d/%d", m.Name, m.Dim, m.Context, m.NumCtx))
}

// context is the model's trained context length.
func (m Model) context() int {
	if m.Context > 0 {
		return m.Context
	}
	return defaultContext
}

func details(m Model) api.ModelDetails {
	if m.Dim > 0 {
		return api.ModelDetails{Format: "gguf", Family: "nomic-bert", Families: []string{"nomic-bert"}, ParameterSize: "137M", QuantizationLevel: "F16"}
	}
	return api.ModelDetails{Format: "gguf", Family: "qwen2", Families: []string{"qwen2"}, ParameterSize: "1.5B", QuantizationLevel: "Q4_K_M"}
}

// modelName is the model a request names: Model, or the deprecated Name
// older clients still send.
func modelName(model, name string) string {
	if model != "" {
		return model
	}
	return name
}
