// Package client is faxhub's Go SDK: a small hand-written layer over the
// REST client generated from /openapi.json (package api beside this one).
//
// The layer adds what every program needs and the generated code cannot
// know: an API key or OAuth access token on every request, refused
// requests as a typed *Error carrying the problem's code, message and HTTP
// status, uploading a file (create the upload, then PUT its bytes, with
// progress), an Idempotency-Key on every send, and waiting for a fax to end.
// Everything else is reachable through Client.API, the generated client
// with the same credentials.
//
// How the generated code is made: TestGeneratedAPI fetches /openapi.json
// from an in-process faxhub, rewrites it from OpenAPI 3.1 to the 3.0
// dialect oapi-codegen reads best (internal/openapi30 says what changes and
// why), and runs the pinned generator (`go tool oapi-codegen`, a go.mod
// tool) with api/oapi-codegen.yaml. It fails when api/openapi.json or
// api/client.gen.go differs from what it made; `go generate ./rest/client`
// rewrites them.
package client

//go:generate go test -run ^TestGeneratedAPI$ . -args -update
