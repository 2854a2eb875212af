package core

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"
)

// ID prefixes name what an identifier points at, so a pasted id explains
// itself in logs and support requests.
const (
	PrefixOwner             = "own_"
	PrefixAPIKey            = "key_"
	PrefixUpload            = "upl_"
	PrefixDocument          = "doc_"
	PrefixDraft             = "drf_"
	PrefixFax               = "fax_"
	PrefixAttempt           = "att_"
	PrefixLedger            = "led_"
	PrefixApproval          = "apr_"
	PrefixCheckout          = "chk_"
	PrefixSession           = "ses_"
	PrefixIdempotent        = "idm_"
	PrefixAgentEnrollment   = "aen_"
	PrefixAgentRegistration = "agr_"
	PrefixJWTID             = "jti_"
	PrefixOAuthGrant        = "grt_"
	PrefixOAuthClient       = "oac_"
	// PrefixPasskey names a stored passkey (the row, not the WebAuthn
	// credential id, which is long and chosen by the authenticator).
	PrefixPasskey = "pky_"
	PrefixCharge  = "chg_"
	PrefixNumber  = "num_"
	// PrefixInbound names a received fax.
	PrefixInbound = "inb_"
	// PrefixPreview names a fax's pages composed before it is sent.
	PrefixPreview = "prv_"
	// PrefixTask names an agent task; PrefixCart a credit purchase (its id
	// is the AP2 cart id); PrefixContext a conversation (A2A contextId)
	// that faxhub started because the agent sent none.
	PrefixTask    = "tsk_"
	PrefixCart    = "cart_"
	PrefixContext = "ctx_"
	// The delegated flow: a host, an agent it runs, a send it asked for.
	PrefixHost           = "hst_"
	PrefixDelegatedAgent = "dag_"
	PrefixDelegatedSend  = "dsn_"
	// PrefixRequest names one HTTP request (X-Request-Id when the client
	// sent none); PrefixSimulated a fax the simulated provider received;
	// PrefixMachineSettlement the idempotency key a payment method settles
	// a machine payment under.
	PrefixRequest           = "req_"
	PrefixSimulated         = "sim_"
	PrefixMachineSettlement = "mpp_"
	// Events (core/events) and where they go: webhook endpoints, their
	// deliveries, and A2A push notification configs.
	PrefixEvent           = "evt_"
	PrefixWebhookEndpoint = "we_"
	PrefixWebhookDelivery = "whd_"
	PrefixPushConfig      = "pnc_"
	// PrefixBatch names a broadcast: one document to many recipients,
	// each a fax of its own (core/faxes).
	PrefixBatch = "bat_"
)

// Secret prefixes: a bearer secret says what it is, so a leaked one can be
// recognised (secret scanners, logs) and a verifier can route it without a
// lookup. The API key prefix adds the mode (APIKeyPrefix).
const (
	SecretAPIKey       = "fxk_"
	SecretSession      = "fxs_"
	SecretEnrollment   = "fxe_"
	SecretClaim        = "fxc_"
	SecretClaimAttempt = "fxt_"
	SecretAgentAccess  = "fxa_"
	// SecretEmailLink is the one-time token of a sign-up or recovery link.
	SecretEmailLink = "fxm_"
	// SecretHostEnrollment prefixes a host enrollment token.
	SecretHostEnrollment = "fxh_"
	// SecretWebhook prefixes a webhook endpoint's v1 signing secret and
	// PublicWebhookKey faxhub's v1a public key, as Standard Webhooks
	// spells them (receivers' libraries expect them).
	SecretWebhook    = "whsec_"
	PublicWebhookKey = "whpk_"
)

var idEncoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewID returns prefix followed by 128 bits in Crockford-style base32 (26
// characters). For the rows written at volume, faxes, their attempts and
// ledger entries, the first 48 bits are the Unix time in milliseconds and
// the other 80 random (the layout of a ULID), so that new rows go to the
// end of their primary-key index instead of to a random page of it: on
// SQLite a commit writes every page its rows touched, and random keys
// touch a page per row. Their creation time is no secret (each carries
// it), and 80 random bits keep them unguessable. Every other id is 128
// random bits.
func NewID(prefix string) string {
	switch prefix {
	case PrefixFax, PrefixAttempt, PrefixLedger, PrefixEvent, PrefixWebhookDelivery:
		return prefix + orderedID(time.Now())
	}
	return prefix + RandomString(16)
}

// orderedID is 48 bits of t's Unix milliseconds and 80 random bits. The
// alphabet is in ASCII order and base32 keeps byte order, so ids made in
// later milliseconds sort after earlier ones.
func orderedID(t time.Time) string {
	var b [16]byte
	ms := uint64(t.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	if _, err := rand.Read(b[6:]); err != nil {
		panic(err) // see RandomString
	}
	return idEncoding.EncodeToString(b[:])
}

// RandomString returns n random bytes encoded in lowercase base32.
func RandomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand never fails on supported platforms (Go 1.24+ panics
		// itself); keep the signature simple for callers.
		panic(err)
	}
	return idEncoding.EncodeToString(b)
}

// NewSecret returns prefix followed by 256 random bits, base64url.
func NewSecret(prefix string) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashSecret is how every bearer secret (API keys, session ids, tokens) is
// stored: secrets are high-entropy random strings, so one SHA-256 is enough
// and lets the store look them up by hash.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// HasPrefix reports whether id carries the given prefix; a cheap first check
// before a store lookup.
func HasPrefix(id, prefix string) bool { return strings.HasPrefix(id, prefix) && len(id) > len(prefix) }

// maxIDLen bounds an id a client names (ours are about 30 characters).
const MaxIDLen = 64

// wellFormedID reports whether s could be one of our ids: at most 64
// ASCII letters, digits and underscores. A client's cursor or filter
// that is not is refused before it reaches a query (PostgreSQL refuses
// invalid UTF-8 in a text parameter outright).
func WellFormedID(s string) bool {
	if len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// MachineOwnerID owns the documents and faxes of paying machines. The
// migration creates it; it has no passkeys and an e-mail address on the
// reserved .invalid domain, so no one can sign in as it or claim it.
const MachineOwnerID = "own_machine"
