module github.com/docsift/docsift

go 1.26.8

require (
	github.com/kljensen/snowball v0.10.0
	github.com/viterin/vek v0.4.3
	go.etcd.io/bbolt v1.5.0
)

require (
	github.com/chewxy/math32 v1.11.0 // indirect
	github.com/viterin/partial v1.1.0 // indirect
	golang.org/x/exp v0.0.0-20250218142911-aa4b98e5adaa // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
