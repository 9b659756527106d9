package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"postgres://docsift:s3cret@db.internal:5432/docsift?sslmode=disable", "postgres://docsift:xxxxx@db.internal:5432/docsift?sslmode=disable"},
		{"postgresql://docsift@db/docsift?password=s3cret&sslmode=require", "postgresql://docsift@db/docsift?password=xxxxx&sslmode=require"},
		{"postgres://db/docsift?sslpassword=s3cret&sslkey=/etc/k.pem", "postgres://db/docsift?sslpassword=xxxxx&sslkey=xxxxx"},
		{"http://ollama:s3cret@10.0.0.5:11434", "http://ollama:xxxxx@10.0.0.5:11434"},
		{"https://search.example/?api_key=s3cret&format=json&Access_Token=s3cret", "https://search.example/?api_key=xxxxx&format=json&Access_Token=xxxxx"},
		{"https://app.example/cb#access_token=s3cret&state=1", "https://app.example/cb#access_token=xxxxx&state=1"},
		{"http://127.0.0.1:11434", "http://127.0.0.1:11434"},
		{"http://user@host/", "http://user@host/"},
		// Does not parse: the password may sit where a port is read.
		{"postgres://u:pa/ss@h:5432/db", "postgres://xxxxx@h:5432/db"},
		{"postgres://u:s3cret@h:port/db?password=s3cret", "postgres://xxxxx@h:port/db?xxxxx"},
		{"ollama:s3cret@10.0.0.5:11434", "xxxxx@10.0.0.5:11434"},
		{"localhost:11434", "localhost:11434"},
		{"", ""},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
		if strings.Contains(URL(c.in), "s3cret") || strings.Contains(URL(c.in), "pa/ss") {
			t.Errorf("URL(%q) = %q keeps the secret", c.in, URL(c.in))
		}
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`llm: ollama url "http://u:s3cret@a:1,http://v:s3cret@b:2": b is listed twice`, `llm: ollama url "http://u:xxxxx@a:1,http://v:xxxxx@b:2": b is listed twice`},
		{"cannot parse `postgres://u:s3cret@h:x/db`: invalid port", "cannot parse `postgres://xxxxx@h:x/db`: invalid port"},
		{`Post "http://h/api?token=s3cret": EOF`, `Post "http://h/api?token=xxxxx": EOF`},
		{"no URL here: password s3cret", "no URL here: password s3cret"}, // not a URL: the caller's to keep out
	} {
		if got := Text(c.in); got != c.want {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
