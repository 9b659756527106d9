package server

// What the external tests (package server_test) see of the package's
// insides.

// ClientOf is clientOf.
var ClientOf = clientOf
