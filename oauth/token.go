package oauth

import (
	"context"
	"net/http"
	"sort"
	"strings"

	"github.com/ory/fosite"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
)

// maxFormBytes bounds token and revocation request bodies.
const maxFormBytes = 64 << 10

// grant is one grant type of the token endpoint, as in dex's
// server/grants: the endpoint reads and checks the request once, finds the
// grant by grant_type, and writes whatever it returns, so every grant
// shares parsing, error writing and response headers. A grant's own rules
// live in core or in fosite, never here.
type grant interface {
	// exchange answers one token request: the members of the token
	// response, or an error (a *core.Error carrying an OAuth error code, or
	// a fosite error).
	exchange(ctx context.Context, r *http.Request) (map[string]any, error)
}

// grants are the grant types the token endpoint serves, by grant_type.
func (s *Server) grants() map[string]grant {
	code := fositeGrant{s}
	return map[string]grant{
		"authorization_code": code,
		"refresh_token":      code,
		GrantTypeAgentClaim:  claimGrant{s},
		GrantTypeJWTBearer:   jwtBearerGrant{s},
	}
}

// grantTypes lists the supported grant types, for metadata and errors.
func (s *Server) grantTypes() []string {
	var out []string
	for gt := range s.grants() {
		out = append(out, gt)
	}
	sort.Strings(out)
	return out
}

// readForm parses a form body of at most maxFormBytes into r.PostForm.
// Parameters may appear at most once (RFC 6749 section 3.1) and must be
// valid text (no NUL, control characters or invalid UTF-8: they would
// otherwise reach the store, where PostgreSQL refuses them).
func readForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the body must be an application/x-www-form-urlencoded form of at most 64 KB")
	}
	if p := formProblem(r.PostForm); p != "" {
		return core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "%s", p)
	}
	return nil
}

// token is the token endpoint: one dispatch over every grant type.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := readForm(w, r); err != nil {
		s.writeTokenError(ctx, w, err)
		return
	}
	gt := r.PostForm.Get("grant_type")
	if gt == "" {
		s.writeTokenError(ctx, w, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "grant_type is required"))
		return
	}
	g, ok := s.grants()[gt]
	if !ok {
		// RFC 6749 section 5.2: unsupported_grant_type (fosite would say
		// invalid_request).
		s.writeTokenError(ctx, w, core.Errorf(core.KindInvalid, "unsupported_grant_type",
			"grant type %s is not supported here; use %s", gt, strings.Join(s.grantTypes(), ", ")))
		return
	}
	resp, err := g.exchange(ctx, r)
	if err != nil {
		s.writeTokenError(ctx, w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// writeTokenError writes an RFC 6749 section 5.2 error for a core error or
// a fosite error alike; server errors are logged, never shown.
func (s *Server) writeTokenError(ctx context.Context, w http.ResponseWriter, err error) {
	if rfc := (*fosite.RFC6749Error)(nil); asFosite(err, &rfc) {
		if rfc.CodeField >= 500 {
			s.log.ErrorContext(ctx, "token", "err", err, "debug", rfc.DebugField)
			web.WriteOAuthError(w, rfc.CodeField, rfc.ErrorField, "the request failed; it has been logged")
			return
		}
		web.WriteOAuthError(w, rfc.CodeField, rfc.ErrorField, rfc.GetDescription())
		return
	}
	s.fail(ctx, w, "token", err)
}
