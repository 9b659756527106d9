package ollamareal

import (
	"regexp"
	"sort"
	"strings"
)

// byteRunes maps each byte to the printable rune byte-level BPE writes it
// as (the GPT-2 convention every byte-level tokenizer.json uses): printable
// Latin-1 bytes stand for themselves, the rest are moved to U+0100 onwards,
// so that every token is a visible string and a space is "Ġ".
var byteRunes = func() [256]rune {
	var m [256]rune
	next := rune(256)
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = next
			next++
		}
	}
	return m
}()

// byteLevel writes s's bytes as byte-level runes.
func byteLevel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteRune(byteRunes[s[i]])
	}
	return b.String()
}

// qwen2Split is Qwen2's pre-tokenizer pattern. Ollama identifies the
// pre-tokenizer by the SHA-256 of this exact text (it then tells llama.cpp
// to split as Qwen2 does), so it must be written byte for byte.
const qwen2Split = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// trainSplit approximates qwen2Split for training (Go's regexp has no
// look-ahead): a word with its leading space, single digits, punctuation
// runs, whitespace.
var trainSplit = regexp.MustCompile(`[^\r\n\pL\pN]?\pL+|\pN| ?[^\s\pL\pN]+|\s+`)

// trainBPE learns up to n merges from the corpus's most frequent pieces:
// each round merges the most frequent adjacent pair (ties broken
// alphabetically, so the result is the same on every run). It returns the
// merges in rank order as "left right" strings and the vocabulary: the 256
// byte runes, then each merge's result.
func trainBPE(passages []string, maxPieces, n int) (vocab, merges []string) {
	counts := make(map[string]int)
	for _, p := range passages {
		for _, piece := range trainSplit.FindAllString(p, -1) {
			counts[byteLevel(piece)]++
		}
	}
	pieces := make([]string, 0, len(counts))
	for p := range counts {
		pieces = append(pieces, p)
	}
	sort.Slice(pieces, func(i, j int) bool {
		if counts[pieces[i]] != counts[pieces[j]] {
			return counts[pieces[i]] > counts[pieces[j]]
		}
		return pieces[i] < pieces[j]
	})
	pieces = pieces[:min(maxPieces, len(pieces))]

	// Symbols are numbered (their index in vocab) so that a pair is one
	// uint64 map key: counting pairs every round is most of the work.
	inVocab := make(map[string]int32)
	for _, r := range byteRunes {
		inVocab[string(r)] = int32(len(vocab))
		vocab = append(vocab, string(r))
	}
	words := make([][]int32, len(pieces))
	freq := make([]int, len(pieces))
	for i, p := range pieces {
		for _, r := range p {
			words[i] = append(words[i], inVocab[string(r)])
		}
		freq[i] = counts[p]
	}
	pairKey := func(a, b int32) uint64 { return uint64(a)<<32 | uint64(uint32(b)) }
	for len(merges) < n {
		pairs := make(map[uint64]int)
		for i, w := range words {
			for j := 0; j+1 < len(w); j++ {
				pairs[pairKey(w[j], w[j+1])] += freq[i]
			}
		}
		var best uint64
		var bestText string
		bestN := 1 // a pair seen once is not worth a token
		for p, c := range pairs {
			if c < bestN || c == 1 {
				continue
			}
			text := vocab[p>>32] + " " + vocab[uint32(p)]
			if c > bestN || text < bestText {
				best, bestText, bestN = p, text, c
			}
		}
		if bestN < 2 {
			break
		}
		left, right := int32(best>>32), int32(uint32(best))
		merged := vocab[left] + vocab[right]
		merges = append(merges, bestText)
		id, ok := inVocab[merged]
		if !ok { // two merges can spell the same token
			id = int32(len(vocab))
			inVocab[merged] = id
			vocab = append(vocab, merged)
		}
		for i, w := range words {
			out := w[:0]
			for j := 0; j < len(w); j++ {
				if j+1 < len(w) && w[j] == left && w[j+1] == right {
					out = append(out, id)
					j++
				} else {
					out = append(out, w[j])
				}
			}
			words[i] = out
		}
	}
	return vocab, merges
}
