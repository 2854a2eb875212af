package hostagent

import (
	"context"
	"crypto/ed25519"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/hosts"
	"github.com/faxhub/faxhub/core/web"
)

// The one verifier of host and agent JWTs (Agent Auth Protocol §4.2–4.6,
// docs/hostagent.md "JWT rules"). Every delegated endpoint goes through
// Host or Agent; nothing else parses a host or agent JWT.

const (
	typHostJWT  = "host+jwt"
	typAgentJWT = "agent+jwt"
	// maxJWTBytes bounds a JWT before it is parsed: an Ed25519 JWT with
	// two public JWKs in its claims is well under 1 KiB.
	maxJWTBytes = 8 << 10
	// maxJTIBytes bounds a jti (it becomes a stored row): core's bound
	// (core/hosts maxJTILength), checked here first so the answer says it.
	maxJTIBytes = 255
)

// allowedAlgs is the algorithm allow-list: Ed25519 keys sign with EdDSA,
// and nothing else is accepted. go-jose refuses any other alg (none,
// HS256 with the public key as an HMAC secret, RS256 …) while parsing.
var allowedAlgs = []jose.SignatureAlgorithm{jose.EdDSA}

// verifierDeps is what the verifier needs of core (hosts.Service): the
// clock, the host and agent a JWT names, and the shared jti store.
type verifierDeps interface {
	Now() time.Time
	HostForJWT(ctx context.Context, iss string) (*hosts.Host, error)
	AgentForJWT(ctx context.Context, iss, sub string) (*hosts.Host, *hosts.Agent, error)
	AcceptJWT(ctx context.Context, u hosts.JWTUse) error
}

// verifier checks host and agent JWTs against the configured API origin.
type verifier struct {
	deps verifierDeps
	// hostAud is the only audience of a host JWT: {api_url}, from
	// configuration and never from the request. agentAud adds the execute
	// URL, which the protocol's default_location makes the audience of an
	// execution JWT.
	hostAud  string
	agentAud []string
}

func newVerifier(deps verifierDeps, apiURL string) *verifier {
	return &verifier{deps: deps, hostAud: apiURL, agentAud: []string{apiURL, apiURL + PathExecute}}
}

// jwtClaims are the claims the verifier reads; anything else is ignored.
type jwtClaims struct {
	jwt.Claims
	AgentPublicKey json.RawMessage `json:"agent_public_key,omitempty"`
	HostPublicKey  json.RawMessage `json:"host_public_key,omitempty"`
	// Capabilities, on an agent JWT, restricts it to these capabilities
	// (protocol §4.3); absent means every granted one.
	Capabilities []string `json:"capabilities,omitempty"`
}

// VerifiedHost is a host JWT that passed every check.
type VerifiedHost struct {
	Host *hosts.Host
	// AgentPublicKey is the agent_public_key claim as sent (parsed by the
	// register endpoint, the only one that needs it).
	AgentPublicKey json.RawMessage
}

// VerifiedAgent is an agent JWT that passed every check: its host, its
// agent (active) and the JWT's capability restriction, if any.
type VerifiedAgent struct {
	Host         *hosts.Host
	Agent        *hosts.Agent
	Capabilities []string
}

// invalidJWT is the protocol's invalid_jwt (401, with the discovery
// challenge written by writeError).
func invalidJWT(format string, args ...any) error {
	return core.Errorf(core.KindUnauthenticated, hosts.CodeInvalidJWT, format, args...)
}

// bearerJWT returns the JWT of the request's Authorization: Bearer header.
func bearerJWT(r *http.Request) (string, error) {
	a, err := web.ParseAuthorization(r)
	if err != nil {
		return "", invalidJWT("send exactly one Authorization header")
	}
	if !a.IsBearer() {
		return "", invalidJWT("send the signed JWT as Authorization: Bearer <jwt>")
	}
	return a.Credentials, nil
}

// parse does the cheap structural checks: size, compact JWS with one
// EdDSA signature, typ, and the unverified claims (read only to find the
// key; nothing is trusted until the signature checks).
func parse(raw, typ string) (*jwt.JSONWebToken, *jwtClaims, error) {
	if len(raw) > maxJWTBytes {
		return nil, nil, invalidJWT("the JWT is larger than %d bytes", maxJWTBytes)
	}
	tok, err := jwt.ParseSigned(raw, allowedAlgs)
	if err != nil {
		if strings.Contains(err.Error(), "unexpected signature algorithm") {
			return nil, nil, invalidJWT("the JWT must be signed with EdDSA (an Ed25519 key); no other alg is accepted")
		}
		return nil, nil, invalidJWT("the JWT is not a compact JWS: %s", strings.TrimPrefix(err.Error(), "go-jose/go-jose: "))
	}
	if len(tok.Headers) != 1 {
		return nil, nil, invalidJWT("the JWT must carry exactly one signature")
	}
	if got, _ := tok.Headers[0].ExtraHeaders[jose.HeaderType].(string); got != typ {
		return nil, nil, invalidJWT("the JWT header typ must be %q (got %q)", typ, got)
	}
	var c jwtClaims
	if err := tok.UnsafeClaimsWithoutVerification(&c); err != nil {
		return nil, nil, invalidJWT("the JWT claims are not a valid JSON object of registered claims")
	}
	if c.Issuer == "" {
		return nil, nil, invalidJWT("the JWT has no iss (the host id or its key's RFC 7638 thumbprint)")
	}
	// The claims are not trusted yet: an iss or sub that cannot be one of
	// ours (a NUL, control characters, the wrong shape) is refused here,
	// before any lookup hands it to the database.
	if !hosts.WellFormedIssuer(c.Issuer) {
		return nil, nil, invalidJWT("the JWT iss must be a host id (hst_…) or its key's RFC 7638 thumbprint (43 base64url characters)")
	}
	if c.Subject != "" && typ == typAgentJWT && !hosts.WellFormedAgentID(c.Subject) {
		return nil, nil, invalidJWT("the agent JWT sub must be an agent id (dag_…)")
	}
	if c.ID == "" {
		return nil, nil, invalidJWT("the JWT has no jti")
	}
	if len(c.ID) > maxJTIBytes || web.ValidText("jti", c.ID) != nil {
		return nil, nil, invalidJWT("the jti must be printable text of at most %d bytes", maxJTIBytes)
	}
	if c.IssuedAt == nil || c.Expiry == nil {
		return nil, nil, invalidJWT("the JWT needs iat and exp")
	}
	return tok, &c, nil
}

// audience checks that aud (a string or an array) names one of want.
func audience(c *jwtClaims, want []string) error {
	for _, a := range c.Audience {
		if slices.Contains(want, a) {
			return nil
		}
	}
	return invalidJWT("the JWT aud must be %s", want[0])
}

// publicKey decodes a stored canonical Ed25519 public JWK.
func publicKey(canonical string) (ed25519.PublicKey, error) {
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON([]byte(canonical)); err != nil {
		return nil, err
	}
	pub, ok := k.Key.(ed25519.PublicKey)
	if !ok {
		return nil, errors.New("not an Ed25519 public key")
	}
	return pub, nil
}

// sameKey reports whether raw is a JWK of exactly the public key pub.
func sameKey(raw json.RawMessage, pub ed25519.PublicKey) bool {
	var k jose.JSONWebKey
	if err := k.UnmarshalJSON(raw); err != nil || !k.IsPublic() {
		return false
	}
	p, ok := k.Key.(ed25519.PublicKey)
	return ok && subtle.ConstantTimeCompare(p, pub) == 1
}

// signature verifies the JWT with pub and the kid rule: a kid, when sent,
// must be the key's RFC 7638 thumbprint (keys are stored canonical,
// without a kid of their own). The claims parse read before the key was
// known become trusted here without a second decoding: go-jose verifies
// the signature over the very payload bytes UnsafeClaimsWithoutVerification
// decoded (JSONWebSignature.Verify returns that same payload).
func signature(tok *jwt.JSONWebToken, pub ed25519.PublicKey, thumbprint string) error {
	if kid := tok.Headers[0].KeyID; kid != "" && kid != thumbprint {
		return invalidJWT("the JWT header kid does not name the signing key (its RFC 7638 thumbprint)")
	}
	if err := tok.Claims(pub); err != nil {
		return invalidJWT("the JWT signature does not verify with the registered key")
	}
	return nil
}

// times checks iat, exp (and nbf when present) against the service clock:
// not issued in the future, not expired, exp − iat at most
// hosts.JWTMaxLifetime; hosts.JWTSkew applies both ways.
func (v *verifier) times(c *jwtClaims) error {
	now := v.deps.Now()
	iat, exp := c.IssuedAt.Time(), c.Expiry.Time()
	switch {
	case iat.After(now.Add(hosts.JWTSkew)):
		return invalidJWT("the JWT iat is in the future; check the host's clock")
	case !exp.After(iat):
		return invalidJWT("the JWT exp must be after its iat")
	case exp.Sub(iat) > hosts.JWTMaxLifetime:
		return invalidJWT("the JWT lives %s; exp − iat may be at most %s", exp.Sub(iat), hosts.JWTMaxLifetime)
	case now.After(exp.Add(hosts.JWTSkew)):
		return invalidJWT("the JWT expired; sign a fresh one for every request")
	case c.NotBefore != nil && c.NotBefore.Time().After(now.Add(hosts.JWTSkew)):
		return invalidJWT("the JWT is not valid yet (nbf)")
	}
	return nil
}

// accept records the jti in the shared store (every replica) until exp +
// skew, charges limit (when not empty; core counts it for the agent of an
// agent JWT, the host of a host JWT) and updates last use, in one commit; a
// replay is invalid_jwt.
func (v *verifier) accept(ctx context.Context, h *hosts.Host, a *hosts.Agent, c *jwtClaims, limit core.Limit) error {
	err := v.deps.AcceptJWT(ctx, hosts.JWTUse{Host: h, Agent: a, JTI: c.ID, Expires: c.Expiry.Time().Add(hosts.JWTSkew), Limit: limit})
	if core.AsError(err).Code == hosts.CodeJWTReplayed {
		return core.Errorf(core.KindUnauthenticated, hosts.CodeInvalidJWT, "this jti was used before; every JWT needs a fresh jti").With("reason", hosts.CodeJWTReplayed)
	}
	return err
}

// Host verifies a host JWT: structure and typ, aud, the host its iss
// names (active, enrolled), the signature with the host's key, the
// host_public_key claim if sent, the times, and last the jti (recorded only
// once the signature has checked, so a forger cannot use up jtis).
func (v *verifier) Host(ctx context.Context, raw string, limit core.Limit) (*VerifiedHost, error) {
	tok, c, err := parse(raw, typHostJWT)
	if err != nil {
		return nil, err
	}
	if err := audience(c, []string{v.hostAud}); err != nil {
		return nil, err
	}
	h, err := v.deps.HostForJWT(ctx, c.Issuer)
	if err != nil {
		return nil, err
	}
	if h.PublicKey == nil || h.Thumbprint == nil {
		return nil, invalidJWT("this host has not enrolled a key yet")
	}
	pub, err := publicKey(*h.PublicKey)
	if err != nil {
		return nil, core.Errorf(core.KindInternal, core.CodeInternal, "stored host key: %v", err)
	}
	if err := signature(tok, pub, *h.Thumbprint); err != nil {
		return nil, err
	}
	if len(c.HostPublicKey) > 0 && !sameKey(c.HostPublicKey, pub) {
		return nil, invalidJWT("host_public_key is not the key this host registered")
	}
	if len(c.AgentPublicKey) > 0 && sameKey(c.AgentPublicKey, pub) {
		return nil, core.Errorf(core.KindInvalid, hosts.CodeHostKeyInUse, "agent_public_key is the host's own key; every agent needs a key pair of its own")
	}
	if err := v.times(c); err != nil {
		return nil, err
	}
	if err := v.accept(ctx, h, nil, c, limit); err != nil {
		return nil, err
	}
	return &VerifiedHost{Host: h, AgentPublicKey: c.AgentPublicKey}, nil
}

// Agent verifies an agent JWT: typ agent+jwt, aud, iss = its host, sub =
// an active agent of that host, the signature with the AGENT's key (never
// the host's), the times and the jti.
func (v *verifier) Agent(ctx context.Context, raw string, limit core.Limit) (*VerifiedAgent, error) {
	tok, c, err := parse(raw, typAgentJWT)
	if err != nil {
		return nil, err
	}
	if c.Subject == "" {
		return nil, invalidJWT("the agent JWT has no sub (the agent_id)")
	}
	if err := audience(c, v.agentAud); err != nil {
		return nil, err
	}
	h, a, err := v.deps.AgentForJWT(ctx, c.Issuer, c.Subject)
	if err != nil {
		return nil, err
	}
	pub, err := publicKey(a.PublicKey)
	if err != nil {
		return nil, core.Errorf(core.KindInternal, core.CodeInternal, "stored agent key: %v", err)
	}
	if err := signature(tok, pub, a.Thumbprint); err != nil {
		return nil, err
	}
	if err := v.times(c); err != nil {
		return nil, err
	}
	if err := v.accept(ctx, h, a, c, limit); err != nil {
		return nil, err
	}
	return &VerifiedAgent{Host: h, Agent: a, Capabilities: c.Capabilities}, nil
}
