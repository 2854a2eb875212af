package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/ory/fosite"
	"github.com/ory/fosite/handler/oauth2"
	"github.com/ory/fosite/handler/openid"
	"github.com/ory/fosite/handler/pkce"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/authstate"
)

// session is what every fosite request of faxhub carries: the OpenID
// Connect session (id_token claims, expiries) plus the owner and the grant
// the tokens act under.
type session struct {
	*openid.DefaultSession
	OwnerID string `json:"owner_id"`
	GrantID string `json:"grant_id"`
	// grant is the grant GrantID names, as read with an access token
	// (storage.get); never stored.
	grant *authstate.OAuthGrant
}

func newSession() *session {
	return &session{DefaultSession: openid.NewDefaultSession()}
}

// Clone keeps the faxhub fields: the embedded Clone would return a bare
// *openid.DefaultSession and lose them.
func (s *session) Clone() fosite.Session {
	if s == nil {
		return nil
	}
	c := *s
	if s.DefaultSession != nil {
		c.DefaultSession = s.DefaultSession.Clone().(*openid.DefaultSession)
	}
	return &c
}

// storedForm lists the request parameters kept with a stored request:
// what fosite's handlers read back (redirect_uri, PKCE, OpenID Connect
// parameters). Secrets a request may carry (code, code_verifier,
// refresh_token, …) are never in it.
func storedForm() []string {
	return []string{
		"client_id", "redirect_uri", "response_type", "response_mode", "scope", "resource", "grant_type",
		"code_challenge", "code_challenge_method", "nonce", "max_age", "prompt", "acr_values", "display", "ui_locales",
	}
}

// storedRequest is the JSON form of a fosite.Requester in an OAuthToken row.
type storedRequest struct {
	ID                string          `json:"id"`
	RequestedAt       time.Time       `json:"requested_at"`
	ClientID          string          `json:"client_id"`
	RequestedScope    []string        `json:"requested_scope"`
	GrantedScope      []string        `json:"granted_scope"`
	RequestedAudience []string        `json:"requested_audience"`
	GrantedAudience   []string        `json:"granted_audience"`
	Form              url.Values      `json:"form"`
	Session           json.RawMessage `json:"session"`
}

// storage adapts authstate.OAuthStore to fosite's storage interfaces.
type storage struct{ s *Server }

var (
	_ fosite.Storage                     = storage{}
	_ oauth2.CoreStorage                 = storage{}
	_ oauth2.TokenRevocationStorage      = storage{}
	_ pkce.PKCERequestStorage            = storage{}
	_ openid.OpenIDConnectRequestStorage = storage{}
)

// hashKey is how a fosite signature (or, for OpenID Connect sessions, the
// code) becomes a row key: only its SHA-256 is stored.
func hashKey(sig string) string {
	sum := sha256.Sum256([]byte(sig))
	return hex.EncodeToString(sum[:])
}

func (st storage) GetClient(ctx context.Context, id string) (fosite.Client, error) {
	c, err := st.s.client(ctx, id)
	if err != nil {
		return nil, err
	}
	return st.s.fositeClient(c), nil
}

// Client assertions (private_key_jwt) are not offered: every client is public.
func (st storage) ClientAssertionJWTValid(context.Context, string) error {
	return fosite.ErrJTIKnown.WithHint("Client assertions are not supported.")
}

func (st storage) SetClientAssertionJWT(context.Context, string, time.Time) error {
	return fosite.ErrServerError.WithHint("Client assertions are not supported.")
}

func (st storage) create(ctx context.Context, kind authstate.OAuthTokenKind, key, accessSig string, req fosite.Requester, exp time.Time) error {
	sess, _ := req.GetSession().(*session)
	sr := storedRequest{
		ID: req.GetID(), RequestedAt: req.GetRequestedAt(), ClientID: req.GetClient().GetID(),
		RequestedScope: req.GetRequestedScopes(), GrantedScope: req.GetGrantedScopes(),
		RequestedAudience: req.GetRequestedAudience(), GrantedAudience: req.GetGrantedAudience(),
		Form: url.Values{},
	}
	for _, k := range storedForm() {
		if v, ok := req.GetRequestForm()[k]; ok {
			sr.Form[k] = v
		}
	}
	var err error
	if sr.Session, err = json.Marshal(req.GetSession()); err != nil {
		return fmt.Errorf("encode oauth session: %w", err)
	}
	data, err := json.Marshal(sr)
	if err != nil {
		return fmt.Errorf("encode oauth request: %w", err)
	}
	now := st.s.now()
	if exp.IsZero() {
		exp = now.Add(st.s.cfg.RefreshTokenLifespan)
	}
	t := &authstate.OAuthToken{
		Kind: kind, Signature: hashKey(key), RequestID: req.GetID(), ClientID: sr.ClientID, Active: true,
		Request: data, CreatedAt: now, ExpiresAt: exp,
	}
	if accessSig != "" {
		t.AccessSignature = hashKey(accessSig)
	}
	if sess != nil {
		t.OwnerID, t.GrantID = sess.OwnerID, sess.GrantID
	}
	return st.s.store.CreateOAuthToken(ctx, t)
}

// get loads a row and rebuilds its request into sess (a fresh session when
// fosite passes none). Inactive rows are returned with their request so
// that fosite can revoke what they produced.
func (st storage) get(ctx context.Context, kind authstate.OAuthTokenKind, key string, sess fosite.Session) (fosite.Requester, bool, error) {
	// An access token is read with its grant in one query (a resource
	// verifies one on every request); the grant rides on the session for
	// VerifyAccessToken. A token whose grant is gone reads as unknown.
	var (
		t     *authstate.OAuthToken
		grant *authstate.OAuthGrant
		err   error
	)
	hashed := hashKey(key)
	if kind == authstate.OAuthAccessToken {
		t, grant, err = st.s.store.GetOAuthAccessToken(ctx, hashed)
	} else {
		t, err = st.s.store.GetOAuthToken(ctx, kind, hashed)
	}
	if errors.Is(err, core.ErrNoRows) {
		return nil, false, fosite.ErrNotFound
	} else if err != nil {
		return nil, false, err
	}
	if sess == nil {
		sess = newSession()
	}
	fs, _ := sess.(*session)
	// Only access-token rows are read on every request, and only their
	// decoding is cached (tokencache.go).
	cacheable := kind == authstate.OAuthAccessToken && fs != nil
	var (
		sr  storedRequest
		hit bool
	)
	if cacheable {
		var cs *session
		if sr, cs, hit = st.s.decoded.get(hashed, t.Request); hit {
			*fs = *cs
		}
	}
	if !hit {
		if err := json.Unmarshal(t.Request, &sr); err != nil {
			return nil, false, fmt.Errorf("decode oauth request: %w", err)
		}
		if err := json.Unmarshal(sr.Session, sess); err != nil {
			return nil, false, fmt.Errorf("decode oauth session: %w", err)
		}
		if cacheable {
			st.s.decoded.add(hashed, t.Request, sr, fs)
		}
	}
	if fs != nil {
		fs.grant = grant
	}
	// The stored row stands for the client as it was: no metadata
	// document is fetched again to read a token. An access token is read
	// on every resource request, and what fosite does with it
	// (introspection, revocation) compares only the client's id, so its
	// client is not read at all: the grant the resource checks next joins
	// the client row, so a token of a deleted client still fails there.
	c := &authstate.OAuthClient{ID: sr.ClientID}
	if kind != authstate.OAuthAccessToken {
		if c, err = st.s.store.GetOAuthClient(ctx, sr.ClientID); err != nil {
			return nil, false, fmt.Errorf("client of oauth request: %w", err)
		}
	}
	r := &fosite.Request{
		ID: sr.ID, RequestedAt: sr.RequestedAt, Client: st.s.fositeClient(c),
		RequestedScope: sr.RequestedScope, GrantedScope: sr.GrantedScope,
		RequestedAudience: sr.RequestedAudience, GrantedAudience: sr.GrantedAudience,
		Form: sr.Form, Session: sess,
	}
	return r, t.Active, nil
}

func (st storage) CreateAuthorizeCodeSession(ctx context.Context, sig string, req fosite.Requester) error {
	return st.create(ctx, authstate.OAuthAuthorizeCode, sig, "", req, req.GetSession().GetExpiresAt(fosite.AuthorizeCode))
}

func (st storage) GetAuthorizeCodeSession(ctx context.Context, sig string, sess fosite.Session) (fosite.Requester, error) {
	r, active, err := st.get(ctx, authstate.OAuthAuthorizeCode, sig, sess)
	if err == nil && !active {
		return r, fosite.ErrInvalidatedAuthorizeCode
	}
	return r, err
}

func (st storage) InvalidateAuthorizeCodeSession(ctx context.Context, sig string) error {
	err := st.s.store.DeactivateOAuthToken(ctx, authstate.OAuthAuthorizeCode, hashKey(sig))
	switch {
	case errors.Is(err, core.ErrNoRows):
		return fosite.ErrNotFound
	case errors.Is(err, core.ErrConflict):
		// A concurrent exchange of the same code won.
		return fosite.ErrInvalidatedAuthorizeCode
	}
	return err
}

func (st storage) CreateAccessTokenSession(ctx context.Context, sig string, req fosite.Requester) error {
	exp := req.GetSession().GetExpiresAt(fosite.AccessToken)
	if exp.IsZero() {
		exp = st.s.now().Add(st.s.cfg.AccessTokenLifespan)
	}
	return st.create(ctx, authstate.OAuthAccessToken, sig, "", req, exp)
}

func (st storage) GetAccessTokenSession(ctx context.Context, sig string, sess fosite.Session) (fosite.Requester, error) {
	r, _, err := st.get(ctx, authstate.OAuthAccessToken, sig, sess)
	return r, err
}

func (st storage) DeleteAccessTokenSession(ctx context.Context, sig string) error {
	return st.s.store.DeleteOAuthToken(ctx, authstate.OAuthAccessToken, hashKey(sig))
}

func (st storage) CreateRefreshTokenSession(ctx context.Context, sig, accessSig string, req fosite.Requester) error {
	return st.create(ctx, authstate.OAuthRefreshToken, sig, accessSig, req, req.GetSession().GetExpiresAt(fosite.RefreshToken))
}

func (st storage) GetRefreshTokenSession(ctx context.Context, sig string, sess fosite.Session) (fosite.Requester, error) {
	r, active, err := st.get(ctx, authstate.OAuthRefreshToken, sig, sess)
	if err == nil && !active {
		return r, fosite.ErrInactiveToken
	}
	return r, err
}

func (st storage) DeleteRefreshTokenSession(ctx context.Context, sig string) error {
	return st.s.store.DeleteOAuthToken(ctx, authstate.OAuthRefreshToken, hashKey(sig))
}

func (st storage) RotateRefreshToken(ctx context.Context, requestID, sig string) error {
	err := st.s.store.RotateOAuthRefresh(ctx, requestID, hashKey(sig))
	switch {
	case errors.Is(err, core.ErrNoRows):
		return fosite.ErrNotFound
	case errors.Is(err, core.ErrConflict):
		return fosite.ErrSerializationFailure
	}
	return err
}

// RevokeRefreshToken and RevokeAccessToken both end the whole request:
// fosite revokes by request id, and every token a code and its refreshes
// produced shares it. Revoking one token of an authorization ends all of
// them (RFC 7009 section 2.1 permits and recommends this).
func (st storage) RevokeRefreshToken(ctx context.Context, requestID string) error {
	return st.s.store.RevokeOAuthRequest(ctx, requestID)
}

func (st storage) RevokeAccessToken(ctx context.Context, requestID string) error {
	return st.s.store.RevokeOAuthRequest(ctx, requestID)
}

func (st storage) CreatePKCERequestSession(ctx context.Context, sig string, req fosite.Requester) error {
	return st.create(ctx, authstate.OAuthPKCE, sig, "", req, st.s.now().Add(st.s.cfg.AuthorizeCodeLifespan))
}

func (st storage) GetPKCERequestSession(ctx context.Context, sig string, sess fosite.Session) (fosite.Requester, error) {
	r, _, err := st.get(ctx, authstate.OAuthPKCE, sig, sess)
	return r, err
}

func (st storage) DeletePKCERequestSession(ctx context.Context, sig string) error {
	return st.s.store.DeleteOAuthToken(ctx, authstate.OAuthPKCE, hashKey(sig))
}

func (st storage) CreateOpenIDConnectSession(ctx context.Context, code string, req fosite.Requester) error {
	return st.create(ctx, authstate.OAuthOIDC, code, "", req, st.s.now().Add(st.s.cfg.AuthorizeCodeLifespan))
}

func (st storage) GetOpenIDConnectSession(ctx context.Context, code string, _ fosite.Requester) (fosite.Requester, error) {
	r, _, err := st.get(ctx, authstate.OAuthOIDC, code, nil)
	return r, err
}

func (st storage) DeleteOpenIDConnectSession(ctx context.Context, code string) error {
	return st.s.store.DeleteOAuthToken(ctx, authstate.OAuthOIDC, hashKey(code))
}
