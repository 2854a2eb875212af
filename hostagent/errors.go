package hostagent

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/web"
)

// Protocol error codes that are not core codes (Agent Auth Protocol §5.13).
const (
	codeUnauthorized         = "unauthorized"
	codeInvalidCapabilities  = "invalid_capabilities"
	codeCapabilityNotFound   = "capability_not_found"
	codeAuthenticationNeeded = "authentication_required"
	codeUnsupportedMode      = "unsupported_mode"
)

// protocolError is the one mapping of core errors onto the protocol's
// {error, message} and HTTP status. Core's delegated codes are already the
// protocol's; a few core codes get their protocol name; everything else
// keeps its code with the status of its kind.
func protocolError(err error) (status int, code, message string, fields map[string]any) {
	e := core.AsError(err)
	status, code, message, fields = web.Status(e.Kind), e.Code, e.Message, e.Fields
	switch {
	case e.Kind == core.KindInternal:
		return http.StatusInternalServerError, core.CodeInternal, "the request failed on faxhub's side; it has been logged", nil
	case e.Code == hosts.CodeInvalidJWT || e.Code == hosts.CodeJWTReplayed:
		return http.StatusUnauthorized, hosts.CodeInvalidJWT, message, fields
	case e.Code == core.CodeInsufficientScope:
		// Only reachable when a capability's operation needs a scope its
		// grant does not carry (an inline upload without create_upload).
		return http.StatusForbidden, hosts.CodeCapabilityNotGranted, message, fields
	case e.Code == hosts.CodeUnknownCapability:
		return http.StatusBadRequest, codeInvalidCapabilities, message, fields
	case e.Code == hosts.CodeAgentPending, e.Code == hosts.CodeAgentRevoked, e.Code == hosts.CodeAgentExpired,
		e.Code == hosts.CodeAgentRejected, e.Code == hosts.CodeHostRevoked, e.Code == hosts.CodeCapabilityNotGranted,
		e.Code == codeUnauthorized:
		status = http.StatusForbidden
	case e.Code == hosts.CodeAgentNotFound || e.Code == hosts.CodeHostNotFound:
		status = http.StatusNotFound
	case e.Code == hosts.CodeAgentExists:
		status = http.StatusConflict
	case e.Kind == core.KindRateLimited:
		code = core.CodeRateLimited
	}
	return status, code, message, fields
}

// writeError writes err as {error, message, …}. invalid_jwt carries the
// discovery challenge; rate_limited its Retry-After; internal errors are
// logged (never the request) and keep their text out.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := core.AsError(err)
	if e.Kind == core.KindInternal {
		if r.Context().Err() == nil {
			h.log.ErrorContext(r.Context(), "delegated request failed", "method", r.Method, "path", web.LogPath(r.URL.Path), "err", err)
		}
	}
	status, code, msg, fields := protocolError(err)
	body := make(map[string]any, len(fields)+2)
	for k, v := range fields {
		body[k] = v
	}
	body["error"], body["message"] = code, msg
	if code == hosts.CodeInvalidJWT {
		if discovery, err := h.url("hostagent.configuration"); err == nil {
			w.Header().Set("WWW-Authenticate", `AgentAuth discovery="`+discovery+`"`)
		}
	}
	if e.Kind == core.KindRateLimited && e.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
	}
	writeJSON(w, status, body)
}

// writeJSON writes an API answer: JSON, never cached.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// IsPath reports a path this adapter serves (the edge's text refusal
// answers those in the protocol's shape).
func IsPath(p string) bool { return slices.Contains(Paths(), p) }

// WriteInvalidRequest writes a 400 invalid_request in the protocol's
// {error, message} shape, for refusals made before the adapter runs.
func WriteInvalidRequest(w http.ResponseWriter, message string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": core.CodeInvalidRequest, "message": message})
}

// WriteRefusal writes a refusal made before the adapter runs (invalid
// text: 400 invalid_request; a body that did not arrive in time: 408
// request_timeout) in the protocol's {error, message} shape.
func WriteRefusal(w http.ResponseWriter, err error) {
	status, code, msg, _ := protocolError(err)
	writeJSON(w, status, map[string]any{"error": code, "message": msg})
}
