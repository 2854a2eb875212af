package hosts

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/agents"
)

// Bounds of host input.
const (
	maxPublicJWKBytes = 2 << 10
	hostNameMax       = 100
	maxJTILength      = 255
)

func invalidPublicKey(msg string) error {
	return core.Errorf(core.KindInvalid, CodeInvalidPublicKey, "%s", msg)
}

// ParsePublicJWK accepts an Ed25519 public JWK ({"kty":"OKP","crv":
// "Ed25519","x":…}, optional kid/alg/use) and refuses anything else,
// including a JWK that carries a private part ("d"): a host must never send
// its private key. Errors are KindInvalid with CodeInvalidPublicKey.
func ParsePublicJWK(raw json.RawMessage) (PublicJWK, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return PublicJWK{}, invalidPublicKey("a public key (an Ed25519 public JWK) is required")
	}
	if len(raw) > maxPublicJWKBytes {
		return PublicJWK{}, invalidPublicKey(fmt.Sprintf("the public key is larger than %d bytes", maxPublicJWKBytes))
	}
	// Members are read loosely (unknown ones ignored) but with their JSON
	// types checked: a number where a string belongs is not a key.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return PublicJWK{}, invalidPublicKey("the public key must be a JSON object (a JWK)")
	}
	if _, ok := m["d"]; ok {
		return PublicJWK{}, invalidPublicKey("the JWK carries a private key (\"d\"); send only the public key, and treat this key pair as exposed")
	}
	str := func(name string) (string, bool) {
		v, ok := m[name]
		if !ok {
			return "", false
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	}
	if kty, _ := str("kty"); kty != "OKP" {
		return PublicJWK{}, invalidPublicKey(`the key must be an Ed25519 public JWK: "kty" must be "OKP"`)
	}
	if crv, _ := str("crv"); crv != "Ed25519" {
		return PublicJWK{}, invalidPublicKey(`the key must be an Ed25519 public JWK: "crv" must be "Ed25519"`)
	}
	if _, ok := m["alg"]; ok {
		if a, _ := str("alg"); a != "EdDSA" && a != "Ed25519" {
			return PublicJWK{}, invalidPublicKey(`"alg" of an Ed25519 key must be "EdDSA" (or "Ed25519")`)
		}
	}
	x, ok := str("x")
	if !ok || x == "" || strings.ContainsAny(x, "=+/") {
		return PublicJWK{}, invalidPublicKey(`"x" must be the 32-byte public key in base64url without padding`)
	}
	key, err := base64.RawURLEncoding.Strict().DecodeString(x)
	if err != nil || len(key) != 32 {
		return PublicJWK{}, invalidPublicKey(`"x" must be the 32-byte public key in base64url without padding`)
	}
	// RFC 7638: the required members in lexicographic order, no spaces; x
	// re-encoded from the bytes so there is one form of each key.
	canonical := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(key) + `"}`
	sum := sha256.Sum256([]byte(canonical))
	return PublicJWK{JSON: canonical, Thumbprint: base64.RawURLEncoding.EncodeToString(sum[:]), Key: key}, nil
}

// normalizeCapabilities checks every capability is known and returns them
// without duplicates, in documentation order.
func normalizeCapabilities(cs []Capability) ([]Capability, error) {
	for _, c := range cs {
		if _, ok := capabilityOps[c]; !ok {
			return nil, core.Errorf(core.KindInvalid, CodeUnknownCapability, "unknown capability %q; capabilities are %v", core.CutUTF8(string(c), 64), Capabilities())
		}
	}
	out := []Capability{}
	for _, c := range Capabilities() {
		if slices.Contains(cs, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func hostName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len([]rune(name)) > hostNameMax {
		return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "the host name is required (at most %d characters)", hostNameMax)
	}
	return name, nil
}

var errKeyInUse = core.Errorf(core.KindConflict, CodeHostKeyInUse, "this public key is already registered to a host or an agent; every host and agent needs a key pair of its own")

// keyFree checks that no host and no agent has the key (the store enforces
// uniqueness within each table; this covers across them).
func (s *Service) keyFree(ctx context.Context, q Tx, thumbprint string) error {
	if _, err := q.GetHostByThumbprint(ctx, thumbprint); err == nil {
		return errKeyInUse
	} else if !errors.Is(err, core.ErrNoRows) {
		return fmt.Errorf("check key: %w", err)
	}
	if _, err := q.GetDelegatedAgentByThumbprint(ctx, thumbprint); err == nil {
		return errKeyInUse
	} else if !errors.Is(err, core.ErrNoRows) {
		return fmt.Errorf("check key: %w", err)
	}
	return nil
}

// Create provisions a host for the owner (rate limited per owner
// across replicas; at most MaxHostsPerOwner live hosts). Default
// capabilities are what the host's agents get without device approval
// (each send_fax still waits for the owner's passkey).
func (s *Service) Create(ctx context.Context, ownerID string, r CreateRequest) (*Created, error) {
	name, err := hostName(r.Name)
	if err != nil {
		return nil, err
	}
	if len(r.DefaultCapabilities) > 2*len(capabilityOps) {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "too many default capabilities")
	}
	caps, err := normalizeCapabilities(r.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	var key *PublicJWK
	if len(bytes.TrimSpace(r.PublicKey)) > 0 && !bytes.Equal(bytes.TrimSpace(r.PublicKey), []byte("null")) {
		k, err := ParsePublicJWK(r.PublicKey)
		if err != nil {
			return nil, err
		}
		key = &k
		if err := s.keyFree(ctx, s.d.Store, k.Thumbprint); err != nil {
			return nil, err
		}
	}
	if err := s.kernel.Allow(ctx, core.LimitHostCreate, ownerID); err != nil {
		if e := core.AsError(err); e.Kind == core.KindRateLimited {
			return nil, core.Errorf(core.KindRateLimited, core.CodeRateLimited, "too many hosts created; retry in %d s", e.RetryAfterSeconds).WithRetryAfter(e.RetryAfterSeconds)
		}
		return nil, err
	}
	now := s.now()
	h := &Host{ID: core.NewID(core.PrefixHost), OwnerID: ownerID, Name: name, DefaultCapabilities: caps, CreatedAt: now}
	out := &Created{Host: h}
	if key != nil {
		h.PublicKey, h.Thumbprint, h.Status, h.EnrolledAt = &key.JSON, &key.Thumbprint, Active, &now
	} else {
		out.EnrollmentToken = core.NewSecret(core.SecretHostEnrollment)
		hash, exp := core.HashSecret(out.EnrollmentToken), now.Add(EnrollmentTTL)
		h.Status, h.EnrollmentHash, h.EnrollmentExpiresAt = PendingEnrollment, &hash, &exp
	}
	switch err := s.d.Store.CreateHost(ctx, h, MaxHostsPerOwner); {
	case errors.Is(err, core.ErrConflict):
		return nil, core.Errorf(core.KindConflict, CodeTooManyHosts, "you have %d hosts already; revoke one first", MaxHostsPerOwner)
	case errors.Is(err, core.ErrExists):
		return nil, errKeyInUse
	case err != nil:
		return nil, fmt.Errorf("create host: %w", err)
	}
	return out, nil
}

// Enroll completes a host created without a key: the token is
// consumed in the same transaction that records the key, so a failed
// enrollment (bad key, key in use) leaves it usable; a used, expired or
// revoked token is refused with CodeInvalidEnrollment.
func (s *Service) Enroll(ctx context.Context, token string, publicKey json.RawMessage, name string) (*Host, error) {
	// The key first: a bad key does not touch the token.
	key, err := ParsePublicJWK(publicKey)
	if err != nil {
		return nil, err
	}
	if name = strings.TrimSpace(name); name != "" {
		if name, err = hostName(name); err != nil {
			return nil, err
		}
	}
	invalid := core.Errorf(core.KindInvalid, agents.CodeInvalidEnrollment, "the host enrollment token is unknown, expired, revoked or already used")
	if !strings.HasPrefix(token, core.SecretHostEnrollment) || len(token) > 200 {
		return nil, invalid
	}
	now := s.now()
	hash := core.HashSecret(token)
	h, err := s.d.Store.GetHostByEnrollment(ctx, hash)
	if errors.Is(err, core.ErrNoRows) {
		return nil, invalid
	} else if err != nil {
		return nil, fmt.Errorf("enroll host: %w", err)
	}
	if h.Status != PendingEnrollment || h.EnrollmentExpiresAt == nil || !now.Before(*h.EnrollmentExpiresAt) {
		return nil, invalid
	}
	if err := s.keyFree(ctx, s.d.Store, key.Thumbprint); err != nil {
		return nil, err
	}
	h, err = s.d.Store.EnrollHost(ctx, hash, name, key.JSON, key.Thumbprint, now)
	switch {
	case errors.Is(err, core.ErrConflict):
		return nil, invalid
	case errors.Is(err, core.ErrExists):
		return nil, errKeyInUse
	case err != nil:
		return nil, fmt.Errorf("enroll host: %w", err)
	}
	return h, nil
}

// List lists the owner's hosts (revoked ones too, newest first) with
// their agents; pending agents past their device code read as expired.
func (s *Service) List(ctx context.Context, ownerID string) ([]WithAgents, error) {
	hosts, err := s.d.Store.ListHosts(ctx, ownerID)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	agents, err := s.d.Store.ListDelegatedAgents(ctx, ownerID)
	if err != nil {
		return nil, fmt.Errorf("list hosts: %w", err)
	}
	now := s.now()
	out := make([]WithAgents, len(hosts))
	idx := make(map[string]int, len(hosts))
	for i, h := range hosts {
		out[i] = WithAgents{Host: h, Agents: []Agent{}}
		idx[h.ID] = i
	}
	for _, a := range agents {
		i, ok := idx[a.HostID]
		if !ok {
			continue
		}
		a.Status = a.effectiveStatus(now)
		out[i].Agents = append(out[i].Agents, a)
	}
	return out, nil
}

// Revoke revokes one of the owner's hosts and every agent it
// registered, at once and for every replica.
func (s *Service) Revoke(ctx context.Context, ownerID, hostID string) error {
	err := s.revokeHost(ctx, ownerID, hostID)
	if errors.Is(err, core.ErrNoRows) {
		h, gerr := s.d.Store.GetHost(ctx, hostID)
		if gerr == nil && h.OwnerID == ownerID && h.Status == Revoked {
			return nil // revoked already: the owner's intent holds
		}
		return core.Errorf(core.KindNotFound, CodeHostNotFound, "no host with that id")
	}
	if err != nil {
		return fmt.Errorf("revoke host: %w", err)
	}
	return nil
}

// thumbprintLen is the length of an RFC 7638 SHA-256 thumbprint in
// unpadded base64url (32 bytes).
const thumbprintLen = 43

// WellFormedIssuer reports whether iss could name a host: a host id
// (hst_ and our id alphabet) or a key's thumbprint (43 base64url
// characters). Anything else (a NUL, control characters, other text) is
// refused before it reaches a query: PostgreSQL refuses a NUL in a text
// parameter (SQLSTATE 22021), which made a forged JWT a 500 there.
func WellFormedIssuer(iss string) bool {
	if core.HasPrefix(iss, core.PrefixHost) {
		return core.WellFormedID(iss)
	}
	if len(iss) != thumbprintLen {
		return false
	}
	for i := 0; i < len(iss); i++ {
		c := iss[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// WellFormedAgentID reports whether sub could name a delegated agent
// (dag_ and our id alphabet), for the same reason.
func WellFormedAgentID(sub string) bool {
	return core.HasPrefix(sub, core.PrefixDelegatedAgent) && core.WellFormedID(sub)
}

func invalidJWT(msg string) error {
	return core.Errorf(core.KindUnauthenticated, CodeInvalidJWT, "%s", msg)
}

// HostForJWT finds the host a host or agent JWT names in iss: its host id
// or the RFC 7638 thumbprint of its key. Only an enrolled host has a key:
// unknown and pending_enrollment hosts are CodeInvalidJWT (KindUnauthenticated),
// a revoked one CodeHostRevoked (KindForbidden).
func (s *Service) HostForJWT(ctx context.Context, iss string) (*Host, error) {
	if !WellFormedIssuer(iss) {
		return nil, invalidJWT("iss must name a registered host (its host id or its key's thumbprint)")
	}
	var h *Host
	var err error
	if core.HasPrefix(iss, core.PrefixHost) {
		h, err = s.d.Store.GetHost(ctx, iss)
	} else {
		h, err = s.d.Store.GetHostByThumbprint(ctx, iss)
	}
	if errors.Is(err, core.ErrNoRows) {
		return nil, invalidJWT("iss names no registered host")
	} else if err != nil {
		return nil, fmt.Errorf("look up host: %w", err)
	}
	if err := hostUsable(h); err != nil {
		return nil, err
	}
	return h, nil
}

// JWTUse is a host or agent JWT whose signature and times checked out.
type JWTUse struct {
	Host  *Host
	Agent *Agent // nil for a host JWT
	// JTI is remembered until Expires (exp + DelegatedJWTSkew).
	JTI     string
	Expires time.Time
	// Limit, when set, is charged in the same commit (a refused call
	// leaves the jti unused), to the agent for an agent JWT, else to the
	// host.
	Limit core.Limit
}

// AcceptJWT accepts a verified host or agent JWT in one commit:
// its jti recorded for its host in the shared store (a jti seen before, on
// any replica, is CodeJWTReplayed, KindUnauthenticated), the caller's rate
// limit charged, and the host's and agent's last use brought up to date.
// Only a JWT whose signature verified gets here, so nobody can spend a
// host's jtis or touch its last use without its key.
func (s *Service) AcceptJWT(ctx context.Context, u JWTUse) error {
	if u.Host == nil || u.Host.ID == "" {
		return invalidJWT("iss is required")
	}
	if u.JTI == "" || len(u.JTI) > maxJTILength {
		return invalidJWT(fmt.Sprintf("jti is required (at most %d characters)", maxJTILength))
	}
	now := s.now()
	err := s.inTx(ctx, func(tx Tx) error {
		if u.Limit != "" {
			subject := u.Host.ID
			if u.Agent != nil {
				subject = u.Agent.ID
			}
			if err := s.kernel.AllowIn(ctx, tx, u.Limit, subject); err != nil {
				return err
			}
		}
		if err := tx.InsertJWTID(ctx, u.Host.ID, u.JTI, now, u.Expires); err != nil {
			return err
		}
		if stale(u.Host.LastUsedAt, now) {
			if err := tx.TouchHost(ctx, u.Host.ID, now); err != nil {
				return fmt.Errorf("touch host: %w", err)
			}
		}
		if u.Agent != nil && stale(u.Agent.LastUsedAt, now) {
			if err := tx.TouchDelegatedAgent(ctx, u.Agent.ID, now); err != nil {
				return fmt.Errorf("touch delegated agent: %w", err)
			}
		}
		return nil
	})
	if errors.Is(err, core.ErrExists) {
		return core.Errorf(core.KindUnauthenticated, CodeJWTReplayed, "this JWT was used already: sign a new one with a fresh jti")
	}
	if err != nil && core.ErrorKind(err) == core.KindInternal {
		return fmt.Errorf("accept delegated jwt: %w", err)
	}
	return err
}

// stale reports whether a last-used time is due for an update (at most one
// write a minute per credential).
func stale(last *time.Time, now time.Time) bool {
	return last == nil || now.Sub(*last) > core.TouchEvery
}
