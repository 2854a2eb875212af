package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
	"github.com/faxhub/faxhub/core/web"
)

// The HTTP endpoints of agent registration (spec, Authentication section
// 3; docs/agents.md): JSON in, JSON out, every rule in core (core/agents/registration.go).
// The claim and jwt-bearer grants are grants of the token endpoint
// (grant_claim.go, grant_jwtbearer.go).
const (
	PathAgentManage   = "/api/auth/agent/identity/manage"
	PathAgentIdentity = "/api/auth/agent/identity"
	PathAgentClaim    = "/api/auth/agent/identity/claim"
	PathAgentRevoke   = "/api/auth/agent/identity/revoke"

	GrantTypeAgentClaim = "urn:faxhub:agent-auth:grant-type:claim"
	GrantTypeJWTBearer  = "urn:ietf:params:oauth:grant-type:jwt-bearer"

	maxAgentJSONBytes = 16 << 10
)

// readAgentJSON decodes a strict JSON body; false once an error is written.
func readAgentJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := decodeAgentJSON(w, r, v); err != nil {
		writeCoreError(w, err)
		return false
	}
	return true
}

// decodeAgentJSON reads an agent endpoint's JSON object: application/json,
// at most maxAgentJSONBytes, no duplicate members, no unknown fields, text
// without NUL, control or bidirectional formatting characters, and errors
// that name the field and the type it must have.
func decodeAgentJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return core.Errorf(core.KindUnsupportedMedia, core.CodeUnsupportedContentType, "send the body as application/json")
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAgentJSONBytes))
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			return core.Errorf(core.KindTooLarge, core.CodeInvalidRequest, "the JSON body is larger than %d bytes", maxAgentJSONBytes)
		}
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the body could not be read")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "a JSON body is required")
	}
	if p, err := jsonProblem(body); err == nil && p != "" {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "%s", p)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "%s", decodeProblem(err, v))
	}
	if dec.More() {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the JSON body has trailing data after the object")
	}
	return nil
}

// writeCoreError writes a core error in the RFC 6749 error shape, with the
// status core's kind maps to; internal errors keep their text out.
func writeCoreError(w http.ResponseWriter, err error) {
	e := core.AsError(err)
	status := web.Status(e.Kind)
	if e.Kind == core.KindRateLimited && e.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
	}
	if e.Kind == core.KindInternal {
		web.WriteOAuthError(w, status, "server_error", "the request failed; it has been logged")
		return
	}
	body := map[string]any{"error": e.Code, "error_description": e.Message}
	for k, v := range e.Fields {
		body[k] = v
	}
	writeJSON(w, status, body)
}

// fail logs an internal error (never its request) and writes err.
func (s *Server) fail(ctx context.Context, w http.ResponseWriter, what string, err error) {
	if core.ErrorKind(err) == core.KindInternal {
		s.log.ErrorContext(ctx, what, "err", err)
	}
	writeCoreError(w, err)
}

var crossOrigin = http.NewCrossOriginProtection()

// manage is POST /api/auth/agent/identity/manage with the owner session.
func (s *Server) manage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := crossOrigin.Check(r); err != nil {
		web.WriteOAuthError(w, http.StatusForbidden, "invalid_request", "cross-origin requests are refused")
		return
	}
	sess, err := s.ownerSession(r)
	if err != nil {
		s.fail(ctx, w, "session check", err)
		return
	}
	if sess == nil {
		web.WriteOAuthError(w, http.StatusUnauthorized, "login_required", "sign in to the console first")
		return
	}
	var req struct {
		Action string   `json:"action"`
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
		ID     string   `json:"id"`
		Kind   string   `json:"kind"` // revoke: "enrollment" (default) or "registration"
	}
	if !readAgentJSON(w, r, &req) {
		return
	}
	switch req.Action {
	case "enroll":
		res, err := s.svc.Agents.CreateEnrollment(ctx, sess.OwnerID, req.Name, req.Scopes)
		if err != nil {
			s.fail(ctx, w, "enroll agent", err)
			return
		}
		writeJSON(w, http.StatusCreated, res)
	case "list":
		es, err := s.svc.Agents.ListEnrollments(ctx, sess.OwnerID)
		if err != nil {
			s.fail(ctx, w, "list enrollments", err)
			return
		}
		rs, err := s.svc.Agents.ListRegistrations(ctx, sess.OwnerID)
		if err != nil {
			s.fail(ctx, w, "list registrations", err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"enrollments": es, "registrations": rs})
	case "revoke":
		if req.Kind == "registration" {
			err = s.svc.Agents.RevokeRegistration(ctx, sess.OwnerID, req.ID)
		} else {
			err = s.svc.Agents.RevokeEnrollment(ctx, sess.OwnerID, req.ID)
		}
		if err != nil {
			s.fail(ctx, w, "revoke", err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"revoked": req.ID})
	default:
		web.WriteOAuthError(w, http.StatusBadRequest, "invalid_request", "action must be enroll, list or revoke")
	}
}

// identity is POST /api/auth/agent/identity: register with an enrollment
// token. An anonymous registration gets its identity assertion at once.
func (s *Server) identity(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req struct {
		Type            string `json:"type"`
		EnrollmentToken string `json:"enrollment_token"`
		LoginHint       string `json:"login_hint"`
	}
	if !readAgentJSON(w, r, &req) {
		return
	}
	reg, err := s.svc.Agents.Register(ctx, agents.RegisterRequest{Type: req.Type, EnrollmentToken: req.EnrollmentToken, LoginHint: req.LoginHint})
	if err != nil {
		s.fail(ctx, w, "agent registration", err)
		return
	}
	if reg.Attempt == nil {
		assertion, _, err := s.issueAssertion(ctx, reg.Registration)
		if err != nil {
			s.fail(ctx, w, "agent registration", err)
			return
		}
		writeJSON(w, http.StatusCreated, map[string]any{"registration_id": reg.Registration.ID, "identity_assertion": assertion, "claim_token": reg.ClaimToken})
		return
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"registration_id": reg.Registration.ID, "claim_token": reg.ClaimToken, "expiry": reg.ClaimExpires,
		"claim": map[string]any{"user_code": reg.Attempt.UserCode, "verification_uri": reg.Attempt.VerificationURI, "interval": agents.ClaimInterval},
	})
}

// claim is POST /api/auth/agent/identity/claim: a new claim attempt.
func (s *Server) claim(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req struct {
		ClaimToken string `json:"claim_token"`
		Email      string `json:"email"`
	}
	if !readAgentJSON(w, r, &req) {
		return
	}
	att, err := s.svc.Agents.StartClaim(ctx, req.ClaimToken, req.Email)
	if err != nil {
		s.fail(ctx, w, "agent claim", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"claim_attempt": att})
}

// revokeIdentity is POST /api/auth/agent/identity/revoke.
func (s *Server) revokeIdentity(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var req struct {
		IdentityAssertion string `json:"identity_assertion"`
	}
	if !readAgentJSON(w, r, &req) {
		return
	}
	a, err := s.verifyAssertion(ctx, req.IdentityAssertion)
	if err != nil {
		s.fail(ctx, w, "revoke registration", err)
		return
	}
	reg, err := s.svc.Agents.RevokeByAssertion(ctx, a.registrationID, a.jti)
	if err != nil {
		s.fail(ctx, w, "revoke registration", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"revoked": reg.ID})
}
