package analysis

import (
	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/danish"
	"github.com/blevesearch/snowballstem/dutch"
	"github.com/blevesearch/snowballstem/english"
	"github.com/blevesearch/snowballstem/finnish"
	"github.com/blevesearch/snowballstem/french"
	"github.com/blevesearch/snowballstem/german"
	"github.com/blevesearch/snowballstem/hungarian"
	"github.com/blevesearch/snowballstem/italian"
	"github.com/blevesearch/snowballstem/norwegian"
	"github.com/blevesearch/snowballstem/portuguese"
	"github.com/blevesearch/snowballstem/romanian"
	"github.com/blevesearch/snowballstem/russian"
	"github.com/blevesearch/snowballstem/spanish"
	"github.com/blevesearch/snowballstem/swedish"
	"github.com/blevesearch/snowballstem/turkish"
)

// Lang is a language as analysis knows it: one whose text it analyses with
// rules of its own (a stemmer, stop words, elision), or Neutral for text
// analysed by script alone. The numbers are stored in index snapshots:
// append new languages, never renumber.
type Lang uint8

// The languages. Chinese, Japanese and Korean are analysed like Neutral
// (their scripts are split into character bigrams whatever the language), but
// are told apart so that an owner's languages can be reported.
const (
	Neutral Lang = iota
	English
	German
	French
	Spanish
	Italian
	Portuguese
	Dutch
	Swedish
	Danish
	Norwegian
	Finnish
	Hungarian
	Romanian
	Russian
	Turkish
	Arabic
	Chinese
	Japanese
	Korean

	// NumLangs bounds Lang: every language is below it.
	NumLangs
)

var langCodes = [NumLangs]string{
	Neutral: "und", English: "en", German: "de", French: "fr", Spanish: "es",
	Italian: "it", Portuguese: "pt", Dutch: "nl", Swedish: "sv", Danish: "da",
	Norwegian: "no", Finnish: "fi", Hungarian: "hu", Romanian: "ro",
	Russian: "ru", Turkish: "tr", Arabic: "ar", Chinese: "zh", Japanese: "ja",
	Korean: "ko",
}

// String is the language's ISO 639-1 code, "und" for Neutral.
func (l Lang) String() string {
	if l < NumLangs {
		return langCodes[l]
	}
	return "und"
}

// snowball is each language's Snowball stemmer (snowballstem.org), as
// compiled to Go by the Snowball project's own generator: the same
// algorithms Lucene, Elasticsearch and PostgreSQL use. Arabic has a light
// stemmer of its own (arabic.go); a language with no entry is not stemmed.
var snowball = [NumLangs]func(*snowballstem.Env) bool{
	English: english.Stem, German: german.Stem, French: french.Stem,
	Spanish: spanish.Stem, Italian: italian.Stem, Portuguese: portuguese.Stem,
	Dutch: dutch.Stem, Swedish: swedish.Stem, Danish: danish.Stem,
	Norwegian: norwegian.Stem, Finnish: finnish.Stem, Hungarian: hungarian.Stem,
	Romanian: romanian.Stem, Russian: russian.Stem, Turkish: turkish.Stem,
}
