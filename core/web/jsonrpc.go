package web

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/faxhub/faxhub/core"
)

// JSON-RPC 2.0's error codes for a request refused before a handler
// read it.
const (
	JSONRPCInvalidRequest = -32600
	JSONRPCInvalidParams  = -32602
)

// WriteJSONRPCRefusal refuses a JSON-RPC request (MCP, A2A) that
// RefuseInvalidText stopped: a body that did not arrive in time is HTTP
// 408 with -32600 (the request never arrived whole), text that cannot be
// used is 400 with -32602 (invalid params).
func WriteJSONRPCRefusal(w http.ResponseWriter, body []byte, err error) {
	if core.ErrorKind(err) == core.KindTimeout {
		writeJSONRPCError(w, http.StatusRequestTimeout, nil, JSONRPCInvalidRequest, core.AsError(err).Message)
		return
	}
	WriteJSONRPCInvalidParams(w, body, core.AsError(err).Message)
}

// WriteJSONRPCInvalidParams refuses a JSON-RPC request (MCP, A2A) whose
// text cannot be used (RefuseInvalidText) with JSON-RPC's invalid params.
func WriteJSONRPCInvalidParams(w http.ResponseWriter, body []byte, msg string) {
	WriteJSONRPCError(w, body, JSONRPCInvalidParams, msg)
}

// WriteJSONRPCError refuses a JSON-RPC request before any handler read it,
// with HTTP 400 and the error code, answering the request's id when body is
// one message with a usable id (a number or a valid string), else null.
func WriteJSONRPCError(w http.ResponseWriter, body []byte, code int, msg string) {
	writeJSONRPCError(w, http.StatusBadRequest, body, code, msg)
}

func writeJSONRPCError(w http.ResponseWriter, status int, body []byte, code int, msg string) {
	var env struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(body, &env)
	var id any
	if s := bytes.TrimSpace(env.ID); len(s) > 0 && (s[0] == '"' || s[0] == '-' || (s[0] >= '0' && s[0] <= '9')) && CheckJSONText(s) == nil {
		id = json.RawMessage(s)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": msg}})
}
