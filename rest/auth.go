package rest

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/web"
)

// resourceMetadataRoute is the authorization server's route serving the
// RFC 9728 document of this API (named, not imported: adapters never
// import each other).
const resourceMetadataRoute = "oauth.protectedResourceAPI"

// resource is the RFC 8707 identifier OAuth access tokens for this API
// carry as their audience.
func (a *api) resource() string { return a.opts.APIURL + apiPrefix }

// authed authenticates the bearer credential of the Authorization header
// (an API key, or an OAuth access token for this API) and puts the
// principal in the request context; scopes and ownership are then checked
// by core for each operation (core.Authorize), whatever the credential.
func (a *api) authed(h authedFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := a.authenticate(r)
		if err != nil {
			if core.ErrorKind(err) == core.KindUnauthenticated {
				w.Header().Set("WWW-Authenticate", a.challenge(r))
			}
			web.WriteError(w, r, a.log, err)
			return
		}
		r = r.WithContext(core.WithPrincipal(r.Context(), p))
		if err := h(w, r, p); err != nil {
			if e := core.AsError(err); p.Kind == core.PrincipalOAuthGrant && e.Code == core.CodeInsufficientScope {
				// RFC 6750 section 3.1: tell an OAuth client which scope
				// to ask for.
				w.Header().Set("WWW-Authenticate", a.scopeChallenge(e))
			}
			web.WriteError(w, r, a.log, err)
		}
	})
}

// authenticate turns the Authorization header into a principal: an fxk_
// secret is an API key; any other bearer is an OAuth access token, which
// the core verifier accepts only if it was issued for this API (a token
// for /mcp or /a2a is refused here, as this API's tokens are there).
func (a *api) authenticate(r *http.Request) (core.Principal, error) {
	authz, err := web.ParseAuthorization(r)
	if err != nil {
		return core.Principal{}, err
	}
	if !authz.IsBearer() {
		how := "your API key"
		if a.opts.Verifier != nil {
			how += " or an OAuth access token for " + a.resource()
		}
		return core.Principal{}, core.Errorf(core.KindUnauthenticated, core.CodeUnauthenticated,
			"send %s as \"Authorization: Bearer <credential>\"", how)
	}
	secret := authz.Credentials
	if strings.HasPrefix(secret, core.SecretAPIKey) || a.opts.Verifier == nil {
		return a.svc.Accounts.AuthenticateAPIKey(r.Context(), secret)
	}
	p, err := a.opts.Verifier.VerifyAccessToken(r.Context(), secret, a.resource())
	if err != nil {
		return core.Principal{}, fmt.Errorf("verify access token: %w", err)
	}
	return p, nil
}

// challenge is the WWW-Authenticate of a 401: the realm, where OAuth
// clients discover the authorization server (RFC 9728 section 5.1), and
// invalid_token when a credential was sent and refused.
func (a *api) challenge(r *http.Request) string {
	parts := []string{`realm="faxhub"`}
	if u := a.resourceMetadataURL(); u != "" {
		parts = append(parts, fmt.Sprintf("resource_metadata=%q", u))
	}
	if authz, perr := web.ParseAuthorization(r); perr == nil && authz.IsBearer() {
		// The body's problem says why; the header only says it was refused.
		parts = append(parts, `error="invalid_token"`)
	}
	return "Bearer " + strings.Join(parts, ", ")
}

// scopeChallenge is the WWW-Authenticate of a 403 insufficient_scope
// answered to an OAuth token (RFC 6750 section 3.1).
func (a *api) scopeChallenge(e *core.Error) string {
	parts := []string{`realm="faxhub"`, `error="insufficient_scope"`}
	if sc, ok := e.Fields["required_scope"].(string); ok && sc != "" {
		parts = append(parts, fmt.Sprintf("scope=%q", sc))
	}
	if u := a.resourceMetadataURL(); u != "" {
		parts = append(parts, fmt.Sprintf("resource_metadata=%q", u))
	}
	return "Bearer " + strings.Join(parts, ", ")
}

// resourceMetadataURL is the URL of this API's RFC 9728 document, or ""
// when OAuth tokens are not accepted or the document is not routed.
func (a *api) resourceMetadataURL() string {
	if a.opts.Verifier == nil || a.urls == nil {
		return ""
	}
	u, err := a.urls.URL(resourceMetadataRoute)
	if err != nil {
		return ""
	}
	return u
}
