package ollamatest

import (
	"strings"
	"unicode"
)

const (
	// defaultContext is a model's context length unless Model.Context says
	// otherwise: large, so that tests not about context never reach it.
	defaultContext = 8192

	// defaultChatNumCtx is the context the real Ollama gives a chat model
	// when the request sets no num_ctx.
	defaultChatNumCtx = 4096

	// embedSpecials is what a BERT-style embedding model adds to each input
	// ([CLS] and [SEP]), counted in prompt_eval_count as the real server
	// counts them.
	embedSpecials = 2

	// msgOverhead is the stand-in's count of the tokens a chat template adds
	// around each message (role and turn markers).
	msgOverhead = 4

	// errOverContext is the real server's answer (400) when an input is
	// longer than the context and may not, or cannot, be truncated.
	errOverContext = "the input length exceeds the context length"
)

// tokens splits text as the stand-in counts tokens, an approximation of a
// WordPiece tokenizer: each run of letters or digits is one token, each
// other non-space rune one token, and each CJK ideograph its own token
// (WordPiece splits them apart).
func tokens(text string) []string {
	var out []string
	var word strings.Builder
	flush := func() {
		if word.Len() > 0 {
			out = append(out, word.String())
			word.Reset()
		}
	}
	for _, r := range text {
		switch {
		case unicode.Is(unicode.Han, r):
			flush()
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word.WriteRune(r)
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			out = append(out, string(r))
		}
	}
	flush()
	return out
}

// unknownRune reports whether r is outside the stand-in's vocabulary:
// symbols such as emoji and private-use characters, which an English
// WordPiece vocabulary lacks and maps to [UNK].
func unknownRune(r rune) bool {
	return unicode.Is(unicode.So, r) || unicode.Is(unicode.Co, r)
}

// truncateEmbedInput applies the real server's rule for an input longer
// than the context ctx: without truncation it is refused; with it, the
// server keeps the first ctx tokens, turns them back into text and embeds
// that text, which fails again when the kept part holds an unknown token
// (the text "[UNK]" is several tokens once tokenised again). It returns the
// text to embed and its token count, or ok false for a 400.
func truncateEmbedInput(text string, ctx int, truncate bool) (kept string, count int, ok bool) {
	toks := tokens(text)
	if len(toks)+embedSpecials <= ctx {
		return text, len(toks) + embedSpecials, true
	}
	if !truncate || ctx <= embedSpecials {
		return "", 0, false
	}
	toks = toks[:ctx-embedSpecials]
	kept = strings.Join(toks, " ")
	if strings.ContainsFunc(kept, unknownRune) {
		return "", 0, false
	}
	return kept, ctx, true
}

// intOption reads a whole-number option of a request (JSON numbers decode
// as float64), or 0.
func intOption(opts map[string]any, name string) int {
	switch v := opts[name].(type) {
	case float64:
		return int(v)
	case int:
		return v
	}
	return 0
}
