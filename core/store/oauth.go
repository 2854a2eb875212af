package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/authstate"
)

var _ authstate.OAuthStore = (*DB)(nil)

// oauthClientRow reads the list and JSON columns as text: they are stored
// as JSON arrays so that any URI survives, and SQLite returns TEXT as a
// string that database/sql will not put into a slice.
type oauthClientRow struct {
	authstate.OAuthClient
	RawRedirectURIs  string `db:"raw_redirect_uris"`
	RawGrantTypes    string `db:"raw_grant_types"`
	RawResponseTypes string `db:"raw_response_types"`
	RawMetadata      []byte `db:"raw_metadata"`
}

func (r *oauthClientRow) client() (*authstate.OAuthClient, error) {
	c := r.OAuthClient
	for _, f := range []struct {
		raw string
		dst *[]string
	}{{r.RawRedirectURIs, &c.RedirectURIs}, {r.RawGrantTypes, &c.GrantTypes}, {r.RawResponseTypes, &c.ResponseTypes}} {
		if err := json.Unmarshal([]byte(f.raw), f.dst); err != nil {
			return nil, fmt.Errorf("decode oauth client %s: %w", c.ID, err)
		}
	}
	c.Metadata = r.RawMetadata
	return &c, nil
}

const oauthClientSelect = `SELECT id, kind, name, uri, logo_uri, redirect_uris AS raw_redirect_uris,
	grant_types AS raw_grant_types, response_types AS raw_response_types, scope, metadata AS raw_metadata,
	created_at, updated_at FROM oauth_clients`

func jsonList(v []string) (string, error) {
	if v == nil {
		v = []string{}
	}
	b, err := json.Marshal(v)
	return string(b), err
}

func oauthClientArgs(c *authstate.OAuthClient) ([]any, error) {
	var lists [3]string
	for i, v := range [][]string{c.RedirectURIs, c.GrantTypes, c.ResponseTypes} {
		s, err := jsonList(v)
		if err != nil {
			return nil, err
		}
		lists[i] = s
	}
	return []any{c.ID, c.Kind, c.Name, c.URI, c.LogoURI, lists[0], lists[1], lists[2], c.Scope, c.Metadata, c.CreatedAt, c.UpdatedAt}, nil
}

const oauthClientInsert = `INSERT INTO oauth_clients (id, kind, name, uri, logo_uri, redirect_uris, grant_types,
	response_types, scope, metadata, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func (x q) CreateOAuthClient(ctx context.Context, c *authstate.OAuthClient) error {
	args, err := oauthClientArgs(c)
	if err != nil {
		return fmt.Errorf("create oauth client: %w", err)
	}
	n, err := x.exec(ctx, oauthClientInsert+" ON CONFLICT DO NOTHING", args...)
	if err == nil && n == 0 {
		err = core.ErrExists
	}
	if err != nil {
		return fmt.Errorf("create oauth client: %w", err)
	}
	return nil
}

func (x q) PutOAuthClient(ctx context.Context, c *authstate.OAuthClient) error {
	args, err := oauthClientArgs(c)
	if err != nil {
		return fmt.Errorf("put oauth client: %w", err)
	}
	err = x.changing(ctx, x.db.caches.accessTokens, func(x q) error {
		_, err := x.exec(ctx, oauthClientInsert+` ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, name = excluded.name,
			uri = excluded.uri, logo_uri = excluded.logo_uri, redirect_uris = excluded.redirect_uris,
			grant_types = excluded.grant_types, response_types = excluded.response_types, scope = excluded.scope,
			metadata = excluded.metadata, updated_at = excluded.updated_at`, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("put oauth client: %w", err)
	}
	return nil
}

func (x q) GetOAuthClient(ctx context.Context, id string) (*authstate.OAuthClient, error) {
	var r oauthClientRow
	if err := x.get(ctx, x.reader(), &r, oauthClientSelect+" WHERE id = ?", id); err != nil {
		return nil, fmt.Errorf("get oauth client: %w", err)
	}
	return r.client()
}

type oauthGrantRow struct {
	authstate.OAuthGrant
	RawScopes string `db:"raw_scopes"`
}

func (r *oauthGrantRow) grant() authstate.OAuthGrant {
	g := r.OAuthGrant
	g.Scopes = strings.Fields(r.RawScopes)
	if g.Scopes == nil {
		g.Scopes = []string{}
	}
	return g
}

const oauthGrantSelect = `SELECT g.id, g.owner_id, g.client_id, g.scopes AS raw_scopes, g.resource, g.created_at, g.updated_at,
	g.last_used_at, g.revoked_at, c.name AS client_name, c.uri AS client_uri
	FROM oauth_grants g JOIN oauth_clients c ON c.id = g.client_id`

func (x q) CreateOAuthGrant(ctx context.Context, g *authstate.OAuthGrant) error {
	n, err := x.exec(ctx, `INSERT INTO oauth_grants (id, owner_id, client_id, scopes, resource, created_at, updated_at,
			last_used_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		g.ID, g.OwnerID, g.ClientID, strings.Join(g.Scopes, " "), g.Resource, g.CreatedAt, g.UpdatedAt, g.LastUsedAt, g.RevokedAt)
	if err == nil && n == 0 {
		err = core.ErrExists
	}
	if err != nil {
		return fmt.Errorf("create oauth grant: %w", err)
	}
	return nil
}

func (x q) getGrant(ctx context.Context, where string, args ...any) (*authstate.OAuthGrant, error) {
	var r oauthGrantRow
	if err := x.get(ctx, x.reader(), &r, oauthGrantSelect+" WHERE "+where, args...); err != nil {
		return nil, err
	}
	g := r.grant()
	return &g, nil
}

func (x q) GetOAuthGrant(ctx context.Context, id string) (*authstate.OAuthGrant, error) {
	g, err := x.getGrant(ctx, "g.id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("get oauth grant: %w", err)
	}
	return g, nil
}

func (x q) FindOAuthGrant(ctx context.Context, ownerID, clientID, resource string) (*authstate.OAuthGrant, error) {
	g, err := x.getGrant(ctx, "g.owner_id = ? AND g.client_id = ? AND g.resource = ? AND g.revoked_at IS NULL", ownerID, clientID, resource)
	if err != nil {
		return nil, fmt.Errorf("find oauth grant: %w", err)
	}
	return g, nil
}

func (x q) UpdateOAuthGrantScopes(ctx context.Context, id string, scopes []string, at time.Time) error {
	err := x.changing(ctx, x.db.caches.accessTokens, func(x q) error {
		n, err := x.exec(ctx, "UPDATE oauth_grants SET scopes = ?, updated_at = ? WHERE id = ? AND revoked_at IS NULL",
			strings.Join(scopes, " "), at, id)
		if err == nil && n == 0 {
			err = core.ErrNoRows
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("update oauth grant: %w", err)
	}
	return nil
}

func (x q) ListOAuthGrants(ctx context.Context, ownerID string) ([]authstate.OAuthGrant, error) {
	var rows []oauthGrantRow
	if err := x.sel(ctx, &rows, oauthGrantSelect+" WHERE g.owner_id = ? AND g.revoked_at IS NULL ORDER BY g.created_at DESC, g.id DESC", ownerID); err != nil {
		return nil, fmt.Errorf("list oauth grants: %w", err)
	}
	out := make([]authstate.OAuthGrant, len(rows))
	for i := range rows {
		out[i] = rows[i].grant()
	}
	return out, nil
}

func (x q) TouchOAuthGrant(ctx context.Context, id string, at time.Time) error {
	if _, err := x.exec(ctx, "UPDATE oauth_grants SET last_used_at = ? WHERE id = ?", at, id); err != nil {
		return fmt.Errorf("touch oauth grant: %w", err)
	}
	// A last use is not a revocation (rowcache.go).
	x.db.caches.accessTokens.update(func(r *accessTokenRow) bool {
		if r.g.ID != id {
			return false
		}
		*r = r.clone()
		r.g.LastUsedAt = usedAt(at)
		return true
	})
	return nil
}

func (x q) RevokeOAuthGrant(ctx context.Context, ownerID, id string, at time.Time) error {
	err := x.atomic(ctx, func(x q) error {
		x.db.caches.accessTokens.changed() // rowcache.go: in the writer's batch
		n, err := x.exec(ctx, "UPDATE oauth_grants SET revoked_at = ? WHERE id = ? AND owner_id = ? AND revoked_at IS NULL", at, id, ownerID)
		if err != nil {
			return err
		}
		if n == 0 {
			return core.ErrNoRows
		}
		_, err = x.exec(ctx, "DELETE FROM oauth_tokens WHERE grant_id = ?", id)
		return err
	})
	if err != nil {
		return fmt.Errorf("revoke oauth grant: %w", err)
	}
	return nil
}

const oauthTokenCols = `kind, signature, request_id, grant_id, client_id, owner_id, active, access_signature, request,
	created_at, expires_at`

func (x q) CreateOAuthToken(ctx context.Context, t *authstate.OAuthToken) error {
	err := x.insert(ctx, `INSERT INTO oauth_tokens (`+oauthTokenCols+`) VALUES (:kind, :signature, :request_id, :grant_id,
		:client_id, :owner_id, :active, :access_signature, :request, :created_at, :expires_at) ON CONFLICT DO NOTHING`, t)
	if err != nil {
		return fmt.Errorf("create oauth %s: %w", t.Kind, err)
	}
	return nil
}

func (x q) GetOAuthToken(ctx context.Context, kind authstate.OAuthTokenKind, signature string) (*authstate.OAuthToken, error) {
	var t authstate.OAuthToken
	if err := x.get(ctx, x.reader(), &t, "SELECT "+oauthTokenCols+" FROM oauth_tokens WHERE kind = ? AND signature = ?", kind, signature); err != nil {
		return nil, fmt.Errorf("get oauth %s: %w", kind, err)
	}
	return &t, nil
}

func (x q) DeleteOAuthToken(ctx context.Context, kind authstate.OAuthTokenKind, signature string) error {
	err := x.changing(ctx, x.db.caches.accessTokens, func(x q) error {
		_, err := x.exec(ctx, "DELETE FROM oauth_tokens WHERE kind = ? AND signature = ?", kind, signature)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete oauth %s: %w", kind, err)
	}
	return nil
}

func (x q) DeactivateOAuthToken(ctx context.Context, kind authstate.OAuthTokenKind, signature string) error {
	err := x.changing(ctx, x.db.caches.accessTokens, func(x q) error {
		n, err := x.exec(ctx, "UPDATE oauth_tokens SET active = FALSE WHERE kind = ? AND signature = ? AND active", kind, signature)
		if err == nil && n == 0 {
			err = x.missingOrConflict(ctx, "oauth_tokens", "kind = ? AND signature = ?", kind, signature)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("deactivate oauth %s: %w", kind, err)
	}
	return nil
}

func (x q) revokeRequest(ctx context.Context, requestID string) error {
	x.db.caches.accessTokens.changed() // rowcache.go: always inside atomic, in the writer's batch
	if _, err := x.exec(ctx, "DELETE FROM oauth_tokens WHERE request_id = ? AND kind = ?", requestID, authstate.OAuthAccessToken); err != nil {
		return err
	}
	_, err := x.exec(ctx, "UPDATE oauth_tokens SET active = FALSE WHERE request_id = ? AND kind = ? AND active", requestID, authstate.OAuthRefreshToken)
	return err
}

func (x q) RevokeOAuthRequest(ctx context.Context, requestID string) error {
	if err := x.atomic(ctx, func(x q) error { return x.revokeRequest(ctx, requestID) }); err != nil {
		return fmt.Errorf("revoke oauth request: %w", err)
	}
	return nil
}

func (x q) RotateOAuthRefresh(ctx context.Context, requestID, signature string) error {
	err := x.atomic(ctx, func(x q) error {
		n, err := x.exec(ctx, "UPDATE oauth_tokens SET active = FALSE WHERE kind = ? AND signature = ? AND request_id = ? AND active",
			authstate.OAuthRefreshToken, signature, requestID)
		if err != nil {
			return err
		}
		if n == 0 {
			return x.missingOrConflict(ctx, "oauth_tokens", "kind = ? AND signature = ? AND request_id = ?", authstate.OAuthRefreshToken, signature, requestID)
		}
		return x.revokeRequest(ctx, requestID) // which marks the access tokens' cache (rowcache.go)
	})
	if err != nil {
		return fmt.Errorf("rotate oauth refresh token: %w", err)
	}
	return nil
}

func (x q) DeleteExpiredOAuth(ctx context.Context, t time.Time) (int64, error) {
	var total int64
	err := x.atomic(ctx, func(x q) error {
		x.db.caches.accessTokens.changed() // rowcache.go: in the writer's batch
		total = 0
		for _, table := range []string{"oauth_tokens", "oauth_consents"} {
			n, err := x.exec(ctx, "DELETE FROM "+table+" WHERE expires_at < ?", t)
			if err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete expired oauth rows: %w", err)
	}
	return total, nil
}

const oauthConsentCols = "approval_id, owner_id, client_id, query, created_at, expires_at"

func (x q) CreateOAuthConsent(ctx context.Context, c *authstate.OAuthConsent) error {
	err := x.insert(ctx, `INSERT INTO oauth_consents (`+oauthConsentCols+`)
		VALUES (:approval_id, :owner_id, :client_id, :query, :created_at, :expires_at) ON CONFLICT DO NOTHING`, c)
	if err != nil {
		return fmt.Errorf("create oauth consent: %w", err)
	}
	return nil
}

func (x q) GetOAuthConsent(ctx context.Context, ownerID, approvalID string) (*authstate.OAuthConsent, error) {
	var c authstate.OAuthConsent
	if err := x.get(ctx, x.reader(), &c, "SELECT "+oauthConsentCols+" FROM oauth_consents WHERE approval_id = ? AND owner_id = ?", approvalID, ownerID); err != nil {
		return nil, fmt.Errorf("get oauth consent: %w", err)
	}
	return &c, nil
}

func (x q) DeleteOAuthConsent(ctx context.Context, ownerID, approvalID string) error {
	n, err := x.exec(ctx, "DELETE FROM oauth_consents WHERE approval_id = ? AND owner_id = ?", approvalID, ownerID)
	if err == nil && n == 0 {
		err = core.ErrNoRows
	}
	if err != nil {
		return fmt.Errorf("delete oauth consent: %w", err)
	}
	return nil
}

type oauthKeyRow struct {
	authstate.OAuthKey
	RawPublicJWK string `db:"raw_public_jwk"`
}

const oauthKeySelect = "SELECT id, purpose, alg, public_jwk AS raw_public_jwk, sealed_private, created_at, retired_at FROM oauth_keys"

func (x q) CreateOAuthKey(ctx context.Context, k *authstate.OAuthKey) error {
	n, err := x.exec(ctx, `INSERT INTO oauth_keys (id, purpose, alg, public_jwk, sealed_private, created_at, retired_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`, k.ID, k.Purpose, k.Alg, string(k.PublicJWK), k.Sealed, k.CreatedAt, k.RetiredAt)
	if err == nil && n == 0 {
		err = core.ErrExists
	}
	if err != nil {
		return fmt.Errorf("create oauth key: %w", err)
	}
	return nil
}

func (x q) ListOAuthKeys(ctx context.Context, purpose authstate.KeyPurpose, retiredAfter time.Time) ([]authstate.OAuthKey, error) {
	var rows []oauthKeyRow
	if err := x.sel(ctx, &rows, oauthKeySelect+" WHERE purpose = ? AND (retired_at IS NULL OR retired_at > ?) ORDER BY created_at DESC, id DESC", purpose, retiredAfter); err != nil {
		return nil, fmt.Errorf("list oauth keys: %w", err)
	}
	out := make([]authstate.OAuthKey, len(rows))
	for i, r := range rows {
		out[i] = r.OAuthKey
		out[i].PublicJWK = []byte(r.RawPublicJWK)
	}
	return out, nil
}

func (x q) RotateOAuthKey(ctx context.Context, k *authstate.OAuthKey, retireAt time.Time) error {
	err := x.atomic(ctx, func(x q) error {
		// Retired first: the role's one active key (the partial unique
		// index oauth_keys_active) is then free for its successor.
		if _, err := x.exec(ctx, "UPDATE oauth_keys SET retired_at = ? WHERE purpose = ? AND alg = ? AND retired_at IS NULL", retireAt, k.Purpose, k.Alg); err != nil {
			return fmt.Errorf("retire the active key: %w", err)
		}
		return x.CreateOAuthKey(ctx, k)
	})
	if err != nil {
		return fmt.Errorf("rotate oauth key: %w", err)
	}
	return nil
}

// oauthAccessSelect reads an access token with its grant (and the grant's
// client name) in one query; GetOAuthAccessToken scans its columns in order.
var oauthAccessSelect = func() string {
	cols := strings.Split(strings.Join(strings.Fields(oauthTokenCols), ""), ",")
	for i, c := range cols {
		cols[i] = "t." + c
	}
	return "SELECT " + strings.Join(cols, ", ") + `,
	g.id AS "g.id", g.owner_id AS "g.owner_id", g.client_id AS "g.client_id", g.scopes AS "g.raw_scopes",
	g.resource AS "g.resource", g.created_at AS "g.created_at", g.updated_at AS "g.updated_at",
	g.last_used_at AS "g.last_used_at", g.revoked_at AS "g.revoked_at", c.name AS "g.client_name", c.uri AS "g.client_uri"
	FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id JOIN oauth_clients c ON c.id = g.client_id
	WHERE t.kind = ? AND t.signature = ?`
}()

// accessTokenRow is what GetOAuthAccessToken answers, as the access
// tokens' cache keeps it (rowcache.go).
type accessTokenRow struct {
	t *authstate.OAuthToken
	g *authstate.OAuthGrant
}

func (r accessTokenRow) clone() accessTokenRow {
	t, g := *r.t, *r.g
	t.Request = bytes.Clone(t.Request)
	g.Scopes = slices.Clone(g.Scopes)
	g.LastUsedAt, g.RevokedAt = cloneTime(g.LastUsedAt), cloneTime(g.RevokedAt)
	return accessTokenRow{&t, &g}
}

// GetOAuthAccessToken reads the row every OAuth-authenticated request
// reads (A2A, MCP, REST with an OAuth token), so it is scanned column by
// column rather than through sqlx's per-call reflection over the nested
// struct (about a tenth of the read's CPU in a profile of A2A GetTask),
// and on SQLite kept (rowcache.go).
func (x q) GetOAuthAccessToken(ctx context.Context, signature string) (*authstate.OAuthToken, *authstate.OAuthGrant, error) {
	r, err := cachedRead(x, x.db.caches.accessTokens, signature, func() (accessTokenRow, error) {
		var (
			t authstate.OAuthToken
			r oauthGrantRow
		)
		g := &r.OAuthGrant
		// Column order: oauthTokenCols, then the grant's as in oauthAccessSelect.
		rctx, err := x.rowCtx(ctx, x.reader())
		if err != nil {
			return accessTokenRow{}, err
		}
		err = x.reader().QueryRowxContext(rctx, x.db.w.Rebind(oauthAccessSelect), x.db.args([]any{authstate.OAuthAccessToken, signature})...).Scan(
			&t.Kind, &t.Signature, &t.RequestID, &t.GrantID, &t.ClientID, &t.OwnerID, &t.Active, &t.AccessSignature, &t.Request,
			&t.CreatedAt, &t.ExpiresAt,
			&g.ID, &g.OwnerID, &g.ClientID, &r.RawScopes, &g.Resource, &g.CreatedAt, &g.UpdatedAt, &g.LastUsedAt, &g.RevokedAt,
			&g.ClientName, &g.ClientURI)
		if err != nil {
			return accessTokenRow{}, fmt.Errorf("get oauth access token: %w", dbErr(err))
		}
		grant := r.grant()
		return accessTokenRow{&t, &grant}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return r.t, r.g, nil
}
