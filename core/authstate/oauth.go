// Package authstate is the persistence port of the owner-facing
// authentication adapters: the OAuth server's fosite state (clients,
// grants, token sessions, consent hand-offs, signing keys) and the
// console's WebAuthn state (passkeys, ceremony challenges, email links).
// These shapes follow the libraries (fosite, go-webauthn), not the fax
// domain, so they live beside core rather than in it. core/store
// implements both ports; conformance/storetest checks them on every
// backend.
package authstate

import (
	"context"
	"encoding/json"
	"time"
)

// OAuthStore persists the OAuth authorization server's state (oauth/):
// clients, grants, token sessions, consent hand-offs and signing keys.
// core/store implements it beside core.Store; it is a separate port because
// only the OAuth server uses it.
//
// The store never sees a token: every token-like key (authorization codes,
// access and refresh token signatures) arrives as a SHA-256 hash computed by
// the caller. Private keys arrive sealed.
//
// Errors follow core.Store: ErrNoRows, ErrExists, ErrConflict.
type OAuthStore interface {
	// CreateOAuthClient registers a client; ErrExists if the id is taken.
	CreateOAuthClient(ctx context.Context, c *OAuthClient) error
	// PutOAuthClient inserts or replaces a client (a metadata document
	// fetched again), keeping its created_at.
	PutOAuthClient(ctx context.Context, c *OAuthClient) error
	GetOAuthClient(ctx context.Context, id string) (*OAuthClient, error)

	// CreateOAuthGrant records a grant; ErrExists if the owner already has
	// a live grant for the same client and resource.
	CreateOAuthGrant(ctx context.Context, g *OAuthGrant) error
	GetOAuthGrant(ctx context.Context, id string) (*OAuthGrant, error)
	// FindOAuthGrant returns the owner's live (unrevoked) grant for client
	// and resource.
	FindOAuthGrant(ctx context.Context, ownerID, clientID, resource string) (*OAuthGrant, error)
	// UpdateOAuthGrantScopes replaces a live grant's scopes; ErrNoRows if it
	// is revoked or missing.
	UpdateOAuthGrantScopes(ctx context.Context, id string, scopes []string, at time.Time) error
	// ListOAuthGrants lists the owner's live grants, newest first, with
	// their client's name and URI.
	ListOAuthGrants(ctx context.Context, ownerID string) ([]OAuthGrant, error)
	TouchOAuthGrant(ctx context.Context, id string, at time.Time) error
	// RevokeOAuthGrant revokes one of the owner's live grants and deletes
	// every token session of it, atomically; ErrNoRows if there is none.
	RevokeOAuthGrant(ctx context.Context, ownerID, id string, at time.Time) error

	// CreateOAuthToken stores a token session; ErrExists on a duplicate.
	CreateOAuthToken(ctx context.Context, t *OAuthToken) error
	// GetOAuthToken returns a session by kind and signature hash, active
	// or not.
	GetOAuthToken(ctx context.Context, kind OAuthTokenKind, signature string) (*OAuthToken, error)
	// GetOAuthAccessToken returns an access token session with the grant it
	// acts under and that grant's client name, in one read (a resource
	// verifies a token on every request); ErrNoRows when the token, its
	// grant or the grant's client is missing.
	GetOAuthAccessToken(ctx context.Context, signature string) (*OAuthToken, *OAuthGrant, error)
	// DeleteOAuthToken deletes one session; deleting a missing one is not
	// an error.
	DeleteOAuthToken(ctx context.Context, kind OAuthTokenKind, signature string) error
	// DeactivateOAuthToken marks an active session inactive once (a used
	// authorization code): ErrConflict if it was inactive already,
	// ErrNoRows if missing.
	DeactivateOAuthToken(ctx context.Context, kind OAuthTokenKind, signature string) error
	// RevokeOAuthRequest ends every token of one authorization (fosite's
	// request id, shared by all tokens a code and its refreshes produce):
	// access tokens are deleted, refresh tokens marked inactive so that
	// their reuse is recognised.
	RevokeOAuthRequest(ctx context.Context, requestID string) error
	// RotateOAuthRefresh marks the refresh token signature inactive (once:
	// ErrConflict if a concurrent refresh won, ErrNoRows if missing) and
	// ends every other token of its request, in one transaction.
	RotateOAuthRefresh(ctx context.Context, requestID, signature string) error
	// DeleteExpiredOAuth removes token sessions and consent hand-offs that
	// expired before t and reports how many rows went.
	DeleteExpiredOAuth(ctx context.Context, t time.Time) (int64, error)

	// CreateOAuthConsent stores the authorization request that waits on an
	// oauth_consent approval.
	CreateOAuthConsent(ctx context.Context, c *OAuthConsent) error
	GetOAuthConsent(ctx context.Context, ownerID, approvalID string) (*OAuthConsent, error)
	// DeleteOAuthConsent consumes a hand-off once: ErrNoRows if it was
	// consumed already, so one decision yields one authorization code.
	DeleteOAuthConsent(ctx context.Context, ownerID, approvalID string) error

	// CreateOAuthKey stores k, the first key of its role: ErrExists when
	// the role has an active key already (one is active at a time; of
	// replicas creating a first key at once, one insert wins).
	CreateOAuthKey(ctx context.Context, k *OAuthKey) error
	// ListOAuthKeys lists the keys of purpose that are active or were
	// retired after retiredAfter (the zero time: every key of purpose),
	// newest first.
	ListOAuthKeys(ctx context.Context, purpose KeyPurpose, retiredAfter time.Time) ([]OAuthKey, error)
	// RotateOAuthKey sets the retirement of the active key of k's role to
	// retireAt (ahead: it signs until then) and stores k as the role's
	// active key, in one transaction. ErrExists when another rotation of
	// the role won at the same moment.
	RotateOAuthKey(ctx context.Context, k *OAuthKey, retireAt time.Time) error
}

// OAuthClientKind says where a client's metadata comes from.
type OAuthClientKind string

const (
	// OAuthClientDynamic was registered with RFC 7591 dynamic registration.
	OAuthClientDynamic OAuthClientKind = "dynamic"
	// OAuthClientMetadataDocument is an https client_id whose metadata
	// document was fetched (MCP 2025-11-25); the row is a cache.
	OAuthClientMetadataDocument OAuthClientKind = "metadata_document"
)

// OAuthClient is a public OAuth client (a chat app).
type OAuthClient struct {
	ID            string          `db:"id"`
	Kind          OAuthClientKind `db:"kind"`
	Name          string          `db:"name"`
	URI           string          `db:"uri"`
	LogoURI       string          `db:"logo_uri"`
	RedirectURIs  []string        `db:"-"`
	GrantTypes    []string        `db:"-"`
	ResponseTypes []string        `db:"-"`
	Scope         string          `db:"scope"`
	// Metadata is the registration request or fetched document, as
	// received (for support and audit).
	Metadata  json.RawMessage `db:"-"`
	CreatedAt time.Time       `db:"created_at"`
	// UpdatedAt is when a metadata document was last fetched.
	UpdatedAt time.Time `db:"updated_at"`
}

// OAuthGrant is the stored form of a Grant.
type OAuthGrant struct {
	ID         string     `db:"id"`
	OwnerID    string     `db:"owner_id"`
	ClientID   string     `db:"client_id"`
	Scopes     []string   `db:"-"`
	Resource   string     `db:"resource"`
	CreatedAt  time.Time  `db:"created_at"`
	UpdatedAt  time.Time  `db:"updated_at"`
	LastUsedAt *time.Time `db:"last_used_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
	// ClientName and ClientURI are filled by ListOAuthGrants.
	ClientName string `db:"client_name"`
	ClientURI  string `db:"client_uri"`
}

// OAuthTokenKind is what an OAuthToken row holds.
type OAuthTokenKind string

const (
	OAuthAuthorizeCode OAuthTokenKind = "authorize_code"
	OAuthPKCE          OAuthTokenKind = "pkce"
	OAuthOIDC          OAuthTokenKind = "oidc"
	OAuthAccessToken   OAuthTokenKind = "access_token"
	OAuthRefreshToken  OAuthTokenKind = "refresh_token"
)

// OAuthToken is one token session of the OAuth server: the serialized
// authorization request a code or token stands for.
type OAuthToken struct {
	Kind OAuthTokenKind `db:"kind"`
	// Signature is the SHA-256 (hex) of the token's signature; the token
	// itself is never stored.
	Signature string `db:"signature"`
	RequestID string `db:"request_id"`
	GrantID   string `db:"grant_id"`
	ClientID  string `db:"client_id"`
	OwnerID   string `db:"owner_id"`
	Active    bool   `db:"active"`
	// AccessSignature links a refresh token to its access token (hashed).
	AccessSignature string    `db:"access_signature"`
	Request         []byte    `db:"request"`
	CreatedAt       time.Time `db:"created_at"`
	ExpiresAt       time.Time `db:"expires_at"`
}

// OAuthConsent is an authorization request parked while its owner decides
// the oauth_consent approval of the same id.
type OAuthConsent struct {
	ApprovalID string    `db:"approval_id"`
	OwnerID    string    `db:"owner_id"`
	ClientID   string    `db:"client_id"`
	Query      string    `db:"query"` // the authorize request's parameters, URL-encoded
	CreatedAt  time.Time `db:"created_at"`
	ExpiresAt  time.Time `db:"expires_at"`
}

// KeyPurpose is what a signing key signs; each purpose has its own active
// key per alg and its own publication rule.
type KeyPurpose string

const (
	// KeyPurposeToken keys sign what the OAuth server issues (identity
	// assertions, id_tokens).
	KeyPurposeToken KeyPurpose = "token"
	// KeyPurposeReceipt keys sign delivery receipts.
	KeyPurposeReceipt KeyPurpose = "receipt"
)

// OAuthKey is a signing key of the OAuth server. The private key is sealed
// by the caller; the store keeps bytes.
type OAuthKey struct {
	ID        string     `db:"id"` // the JWK kid
	Purpose   KeyPurpose `db:"purpose"`
	Alg       string     `db:"alg"`
	PublicJWK []byte     `db:"public_jwk"`
	Sealed    []byte     `db:"sealed_private"`
	CreatedAt time.Time  `db:"created_at"`
	RetiredAt *time.Time `db:"retired_at"`
}
