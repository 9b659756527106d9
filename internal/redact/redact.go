// Package redact takes credentials out of the URLs docsift writes to its
// log and to the errors it gives operators: an operator's --store URL
// holds the database's password (postgres://docsift:PASSWORD@db/docsift,
// or ?password=), and an Ollama or SearxNG URL may hold a user and
// password, or a token in its query. Logs are shipped, shared and pasted
// into issues; passwords have no place in them.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// hidden stands for what was taken out, as url.URL.Redacted writes it.
const hidden = "xxxxx"

// URL is raw with the password of its user, and the values of its query
// parameters whose names say they hold a credential (password, token,
// api_key, secret, sig, …), replaced by xxxxx. The user's name stays: it
// tells an operator which account was used. What does not parse as a URL
// loses all before the last '@' after its scheme, and its query.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Opaque != "" {
		return roughly(raw)
	}
	u.RawQuery = redactParams(u.RawQuery)
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = redactParams(u.Fragment), ""
	}
	return u.Redacted()
}

// roughly redacts a URL that does not parse: its password may be anywhere
// (postgres://u:pa/ss@host is read with "pa" as a port), so everything
// up to the last '@' after the scheme goes, and the query after it.
func roughly(s string) string {
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + len("://")
	}
	if at := strings.LastIndexByte(s, '@'); at >= start {
		s = s[:start] + hidden + s[at:]
	}
	if q := strings.IndexAny(s[start:], "?#"); q >= 0 {
		s = s[:start+q+1] + hidden
	}
	return s
}

// redactParams hides the values of a query's (or fragment's) parameters
// that hold credentials, keeping the others and their order.
func redactParams(query string) string {
	if query == "" {
		return query
	}
	params := strings.Split(query, "&")
	for i, p := range params {
		name, _, hasValue := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if hasValue && secretName(name) {
			params[i] = p[:strings.IndexByte(p, '=')+1] + hidden
		}
	}
	return strings.Join(params, "&")
}

// secretWords are parts of parameter names that hold credentials:
// password, passwd, sslpassword, pwd, token, access_token, api_key,
// apikey, secret, client_secret, auth, sig, signature, credential, session.
var secretWords = []string{"pass", "pwd", "token", "key", "secret", "auth", "sig", "cred", "session"}

func secretName(name string) bool {
	name = strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// urlInText finds URLs written in a text: a scheme, "://" and what
// follows up to a space, a quote, a bracket or a comma (which separates
// the servers of a list such as --ollama-url's).
var urlInText = regexp.MustCompile("[A-Za-z][A-Za-z0-9+.-]*://[^\\s\"'`<>,]*")

// Text is s with every URL in it passed through URL: an error that quotes
// a URL, or a list of them.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	return urlInText.ReplaceAllStringFunc(s, URL)
}
