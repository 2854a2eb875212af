package web

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/faxhub/faxhub/core"
)

// BearerResource is an OAuth-protected resource (the MCP server, the A2A
// endpoint): what it is called in messages and the audience its tokens
// must carry.
type BearerResource struct {
	// Name is how messages refer to it ("the MCP server").
	Name string
	// URL is the resource identifier tokens are issued for.
	URL string
	// Hint ends the "no token" message: how a client gets one.
	Hint string
	// APIKeyHint replaces the message when an API key is presented.
	APIKeyHint string
}

// BearerRefusal is why a request's token was not accepted. Status is 400,
// 401, 408 or 503; Error is the RFC 6750 error code ("" when no credential
// was sent at all, invalid_request, invalid_token), or request_timeout
// (408) when the request ended before the check; Description is for the
// client. Err is set when the token could not be checked (the verifier
// failed, not the token): log it unless the request ended, never show it.
type BearerRefusal struct {
	Status      int
	Error       string
	Description string
	Err         error
}

// AuthenticateBearer is the one check of an OAuth access token presented to
// a resource: exactly one Authorization header, the Bearer scheme (DPoP-bound
// tokens and DPoP proofs are refused: no resource here verifies proofs), a
// token the verifier accepts for res.URL. Each adapter writes the refusal in
// its protocol (problem+json, JSON-RPC) with its own challenge header.
func AuthenticateBearer(r *http.Request, v core.TokenVerifier, res BearerResource) (core.Principal, *BearerRefusal) {
	authz, err := ParseAuthorization(r)
	if err != nil {
		return core.Principal{}, &BearerRefusal{Status: http.StatusBadRequest, Error: "invalid_request", Description: core.AsError(err).Message}
	}
	scheme, tok := authz.Scheme, authz.Credentials
	switch {
	case strings.EqualFold(scheme, "DPoP"), len(r.Header.Values("DPoP")) > 0:
		return core.Principal{}, &BearerRefusal{Status: http.StatusUnauthorized, Error: "invalid_token",
			Description: "DPoP-bound access tokens are not accepted by " + res.Name + "; obtain a plain Bearer token (without a DPoP proof) and send it as Authorization: Bearer"}
	case scheme == "" || tok == "":
		return core.Principal{}, &BearerRefusal{Status: http.StatusUnauthorized,
			Description: "an OAuth access token is required: " + res.Hint}
	case !strings.EqualFold(scheme, "Bearer"):
		return core.Principal{}, &BearerRefusal{Status: http.StatusUnauthorized, Error: "invalid_token",
			Description: "unsupported authorization scheme " + scheme + "; use Bearer"}
	}
	p, err := v.VerifyAccessToken(r.Context(), tok, res.URL)
	if err == nil {
		return p, nil
	}
	if ctxErr := r.Context().Err(); ctxErr != nil {
		// The request ended under the check (the client hung up, or its
		// body missed its read deadline and the server cancelled the
		// request): whatever the verifier made of that, it says nothing
		// about the token, and an invalid_token would make the client
		// throw a good one away.
		return core.Principal{}, &BearerRefusal{Status: http.StatusRequestTimeout, Error: core.CodeRequestTimeout,
			Description: "the request ended before its access token could be checked (the connection closed or the body did not arrive in time); send it again",
			Err:         fmt.Errorf("verify access token: %w", ctxErr)}
	}
	if core.ErrorKind(err) != core.KindUnauthenticated {
		return core.Principal{}, &BearerRefusal{Status: http.StatusServiceUnavailable, Error: core.CodeInternal,
			Description: "the token could not be checked; try again", Err: err}
	}
	msg := core.AsError(err).Message
	if strings.HasPrefix(tok, core.SecretAPIKey) && res.APIKeyHint != "" {
		msg = "API keys are not accepted by " + res.Name + "; " + res.APIKeyHint
	}
	return core.Principal{}, &BearerRefusal{Status: http.StatusUnauthorized, Error: "invalid_token", Description: msg}
}
