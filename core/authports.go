package core

import (
	"context"
	"time"
)

// The ports below connect adapters that must not import each other: the
// OAuth server (oauth/) issues tokens that MCP and A2A verify, and the owner
// console (passkeys/) lists and revokes what the OAuth server granted.
// cmd/faxhub (through internal/app) wires the implementations.

// TokenVerifier checks an OAuth access token presented to a resource (the
// MCP server, the A2A endpoint). It returns the token's Principal; a token
// that is unknown, expired, revoked or issued for another audience is a
// KindUnauthenticated *Error with code invalid_token.
type TokenVerifier interface {
	VerifyAccessToken(ctx context.Context, token, audience string) (Principal, error)
}

// Signer signs JWTs with the issuer's current EdDSA signing key (oauth/
// implements it), so what faxhub asserts to an agent (an AP2 cart mandate,
// an identity assertion) verifies against the keys at {issuer}/jwks.
type Signer interface {
	// SignJWT signs claims as a compact JWS whose header carries typ and
	// the key's kid.
	SignJWT(ctx context.Context, typ string, claims any) (string, error)
	// JWKSURL is where the verification keys are published.
	JWKSURL() string
}

// Grant is an owner's standing authorization of an OAuth client (a chat
// app): what it may do and when it was last used.
type Grant struct {
	ID         string     `json:"id"`
	OwnerID    string     `json:"-"`
	ClientID   string     `json:"clientId"`
	ClientName string     `json:"clientName"`
	ClientURI  string     `json:"clientUri,omitempty"`
	Scopes     []string   `json:"scopes"` // OAuth scopes, including openid, offline_access…
	Resource   string     `json:"resource"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt,omitempty"`
}

// GrantDirectory lists and revokes an owner's grants; revoking stops every
// access and refresh token of the grant at once.
type GrantDirectory interface {
	ListGrants(ctx context.Context, ownerID string) ([]Grant, error)
	RevokeGrant(ctx context.Context, ownerID, grantID string) error
}

// Mail is one message to an owner.
type Mail struct {
	To      string
	Subject string
	Text    string
}

// Mailer sends mail: a dev mailbox (a console page plus the log) by
// default, SMTP when configured. Message bodies may carry one-time links:
// implementations must not log them outside the dev mailbox.
type Mailer interface {
	Send(ctx context.Context, m Mail) error
}
