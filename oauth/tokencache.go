package oauth

import (
	"bytes"
	"maps"
	"slices"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/ory/fosite/token/jwt"
)

// decodedCacheSize bounds the decoded access-token requests kept: one
// entry is a few hundred bytes, and a resource server sees far fewer live
// tokens than this at once.
const decodedCacheSize = 4096

// decodedRequests keeps the decoded JSON of access-token rows. Every
// resource request (MCP, A2A, REST with an OAuth token) reads its token's
// row; decoding the row's stored request and session cost as much as
// reading the row (issue 32's profile of A2A GetTask). The row is still
// read every time (it says whether the token is active and carries its
// grant, so revocation and expiry are decided on the database as before,
// on every replica); only the decoding is skipped, and only when the row's
// request bytes are exactly those the entry was decoded from. A token's
// stored request never changes, so nothing needs invalidating: a row that
// did change would miss and be decoded again.
type decodedRequests struct {
	c *lru.Cache[string, *decodedRequest]
}

// decodedRequest is one row's request as decoded: raw is the JSON it
// came from, sess the session it held. Both are read-only: copies are
// handed out.
type decodedRequest struct {
	raw  []byte
	sr   storedRequest
	sess *session
}

func newDecodedRequests() *decodedRequests {
	c, err := lru.New[string, *decodedRequest](decodedCacheSize)
	if err != nil {
		// Only a non-positive size fails.
		panic(err)
	}
	return &decodedRequests{c: c}
}

// get returns the request decoded from raw under key, if it is cached.
func (d *decodedRequests) get(key string, raw []byte) (storedRequest, *session, bool) {
	if d == nil {
		return storedRequest{}, nil, false
	}
	e, ok := d.c.Get(key)
	if !ok || !bytes.Equal(e.raw, raw) {
		return storedRequest{}, nil, false
	}
	sr := e.sr
	sr.RequestedScope, sr.GrantedScope = slices.Clone(sr.RequestedScope), slices.Clone(sr.GrantedScope)
	sr.RequestedAudience, sr.GrantedAudience = slices.Clone(sr.RequestedAudience), slices.Clone(sr.GrantedAudience)
	sr.Form = maps.Clone(sr.Form)
	return sr, copySession(e.sess), true
}

// add remembers sr and sess as decoded from raw under key; it keeps its
// own copies, so the caller may go on using (and changing) what it passed.
func (d *decodedRequests) add(key string, raw []byte, sr storedRequest, sess *session) {
	if d == nil || sess == nil {
		return
	}
	sr.Session = nil
	sr.RequestedScope, sr.GrantedScope = slices.Clone(sr.RequestedScope), slices.Clone(sr.GrantedScope)
	sr.RequestedAudience, sr.GrantedAudience = slices.Clone(sr.RequestedAudience), slices.Clone(sr.GrantedAudience)
	sr.Form = maps.Clone(sr.Form)
	d.c.Add(key, &decodedRequest{raw: bytes.Clone(raw), sr: sr, sess: copySession(sess)})
}

// copySession copies s far enough that changing the copy's fields,
// expiries, claims or headers leaves s as it was (the DefaultSession's own
// Clone does the same by reflection, at several times the cost). The
// grant is not part of a decoded session and is left out.
func copySession(s *session) *session {
	c := &session{OwnerID: s.OwnerID, GrantID: s.GrantID}
	if s.DefaultSession == nil {
		return c
	}
	ds := *s.DefaultSession
	ds.ExpiresAt = maps.Clone(ds.ExpiresAt)
	if ds.Claims != nil {
		cl := *ds.Claims
		cl.Audience = slices.Clone(cl.Audience)
		cl.AuthenticationMethodsReferences = slices.Clone(cl.AuthenticationMethodsReferences)
		cl.Extra = maps.Clone(cl.Extra)
		ds.Claims = &cl
	}
	if ds.Headers != nil {
		ds.Headers = &jwt.Headers{Extra: maps.Clone(ds.Headers.Extra)}
	}
	c.DefaultSession = &ds
	return c
}
