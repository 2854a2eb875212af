package web

import (
	"context"
	"net/http"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
)

// SessionCookieName is the owner's first-party session cookie: the console
// sets it, every owner endpoint reads it, and `faxhub admin session create`
// prints one for scripts.
const SessionCookieName = "faxhub_session"

// Sessions authenticates session secrets (accounts.Service does).
type Sessions interface {
	AuthenticateSession(ctx context.Context, secret string) (*accounts.Session, error)
}

// OwnerSession returns the live session of the request's session cookie,
// or nil when there is none or it is no longer valid. Only failures to
// check it are errors.
func OwnerSession(r *http.Request, s Sessions) (*accounts.Session, error) {
	c, err := r.Cookie(SessionCookieName)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	sess, err := s.AuthenticateSession(r.Context(), c.Value)
	if core.ErrorKind(err) == core.KindUnauthenticated {
		return nil, nil
	}
	return sess, err
}

// Authorization is the parsed Authorization header of a request.
type Authorization struct {
	// Scheme is as sent ("Bearer", "DPoP", …); compare it with
	// strings.EqualFold. Empty when there is no header.
	Scheme string
	// Credentials is what follows the scheme, trimmed.
	Credentials string
}

// IsBearer reports a Bearer header with a non-empty token.
func (a Authorization) IsBearer() bool {
	return strings.EqualFold(a.Scheme, "Bearer") && a.Credentials != ""
}

// ParseAuthorization reads the Authorization header. More than one header
// is refused (RFC 9110 allows only one; a proxy that adds a second one must
// not decide which credential counts).
func ParseAuthorization(r *http.Request) (Authorization, error) {
	hs := r.Header.Values("Authorization")
	switch len(hs) {
	case 0:
		return Authorization{}, nil
	case 1:
	default:
		return Authorization{}, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "send exactly one Authorization header")
	}
	scheme, cred, _ := strings.Cut(strings.TrimSpace(hs[0]), " ")
	return Authorization{Scheme: scheme, Credentials: strings.TrimSpace(cred)}, nil
}

// SingleHeader returns the value of a header that must appear at most
// once (Idempotency-Key): two of them are refused rather than one picked,
// since the client and a proxy could each mean a different one. Empty when
// absent.
func SingleHeader(r *http.Request, name string) (string, error) {
	hs := r.Header.Values(name)
	if len(hs) > 1 {
		return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "send exactly one %s header (this request has %d)", name, len(hs))
	}
	if len(hs) == 0 {
		return "", nil
	}
	// Checked here as well as at the edge (RefuseInvalidText): the value
	// becomes data (a stored key) in whatever handler asks for it.
	if err := ValidText("the "+name+" header", hs[0]); err != nil {
		return "", err
	}
	return hs[0], nil
}

// BearerToken returns the token of an Authorization: Bearer header; false
// when there is none, another scheme, or more than one header.
func BearerToken(r *http.Request) (string, bool) {
	a, err := ParseAuthorization(r)
	if err != nil || !a.IsBearer() {
		return "", false
	}
	return a.Credentials, true
}

// credentialParams are query parameters that carry credentials in other
// APIs. Resources refuse them rather than ignore them: a key that appeared
// in a URL has leaked into logs and must be rotated.
var credentialParams = [...]string{"access_token", "api_key", "apiKey", "key", "token"}

// CredentialInQuery names the first query parameter of r that looks like a
// credential.
func CredentialInQuery(r *http.Request) (string, bool) {
	q := r.URL.Query()
	for _, name := range credentialParams {
		if q.Has(name) {
			return name, true
		}
	}
	return "", false
}
