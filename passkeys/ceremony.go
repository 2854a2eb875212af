package passkeys

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/approvals"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/core/web"
)

// Error codes of the ceremonies, beside core's.
const (
	codeChallengeUnknown = "webauthn_challenge_unknown"
	codeChallengeUsed    = "webauthn_challenge_used"
	codePasskeyInvalid   = "passkey_invalid"
	codeLastPasskey      = "last_passkey"
)

// owner is an Owner as go-webauthn sees it. The user handle is the owner
// id: random, stable, and free of personal data.
type owner struct {
	o    *accounts.Owner
	keys []authstate.Passkey
}

func (u *owner) WebAuthnID() []byte          { return []byte(u.o.ID) }
func (u *owner) WebAuthnName() string        { return u.o.Email }
func (u *owner) WebAuthnDisplayName() string { return cmp.Or(u.o.Name, u.o.Email) }
func (u *owner) WebAuthnCredentials() []webauthn.Credential {
	out := make([]webauthn.Credential, 0, len(u.keys))
	for _, k := range u.keys {
		if c, err := credentialOf(k); err == nil {
			out = append(out, c)
		}
	}
	return out
}

func (u *owner) descriptors() []protocol.CredentialDescriptor {
	var out []protocol.CredentialDescriptor
	for _, c := range u.WebAuthnCredentials() {
		out = append(out, c.Descriptor())
	}
	return out
}

func credentialOf(k authstate.Passkey) (webauthn.Credential, error) {
	id, err := base64.RawURLEncoding.DecodeString(k.CredentialID)
	if err != nil {
		return webauthn.Credential{}, fmt.Errorf("passkey %s: credential id: %w", k.ID, err)
	}
	flags := protocol.FlagUserPresent
	if k.UserVerified {
		flags |= protocol.FlagUserVerified
	}
	if k.BackupEligible {
		flags |= protocol.FlagBackupEligible
	}
	if k.BackupState {
		flags |= protocol.FlagBackupState
	}
	var transports []protocol.AuthenticatorTransport
	for _, t := range strings.Fields(k.Transports) {
		transports = append(transports, protocol.AuthenticatorTransport(t))
	}
	return webauthn.Credential{
		ID: id, PublicKey: k.PublicKey, AttestationType: k.AttestationType, Transport: transports,
		Flags:         webauthn.NewCredentialFlags(flags),
		Authenticator: webauthn.Authenticator{AAGUID: k.AAGUID, SignCount: uint32(k.SignCount)},
	}, nil
}

func (c *Console) loadOwner(ctx context.Context, id string) (*owner, error) {
	o, err := c.svc.Accounts.Owner(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("load owner: %w", err)
	}
	keys, err := c.store.ListPasskeys(ctx, id)
	if err != nil {
		return nil, err
	}
	return &owner{o: o, keys: keys}, nil
}

// saveChallenge stores a ceremony's state under the hash of its challenge.
// Old rows are purged on the way, so the table stays small without a job.
func (c *Console) saveChallenge(ctx context.Context, sd *webauthn.SessionData, purpose string, ownerID *string, binding string) error {
	now := c.now()
	// Nothing older than an e-mail link's lifetime (the longest of
	// them) can still be used.
	if err := c.store.PurgeWebAuthn(ctx, now.Add(-accounts.EmailLinkTTL)); err != nil {
		c.log.WarnContext(ctx, "purge webauthn state", "err", err)
	}
	state := *sd
	state.Challenge = ""
	b, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("encode webauthn session: %w", err)
	}
	return c.store.CreateChallenge(ctx, &authstate.WebAuthnChallenge{
		Hash: core.HashSecret(sd.Challenge), Purpose: purpose, OwnerID: ownerID, Binding: binding,
		Session: b, CreatedAt: now, ExpiresAt: now.Add(challengeTTL),
	})
}

// claimChallenge consumes the challenge the authenticator signed (as the
// client reported it) if it was issued for purpose. A failed verification
// afterwards does not give it back: every challenge is tried at most once.
func (c *Console) claimChallenge(ctx context.Context, clientChallenge, purpose string) (*authstate.WebAuthnChallenge, webauthn.SessionData, error) {
	var sd webauthn.SessionData
	if clientChallenge == "" {
		return nil, sd, core.Errorf(core.KindInvalid, codeChallengeUnknown, "the passkey response carries no challenge")
	}
	ch, err := c.store.ClaimChallenge(ctx, core.HashSecret(clientChallenge), purpose, c.now())
	switch {
	case errors.Is(err, core.ErrNoRows):
		return nil, sd, core.Errorf(core.KindForbidden, codeChallengeUnknown, "this passkey prompt was not issued for this action; start again")
	case errors.Is(err, core.ErrConflict):
		return nil, sd, core.Errorf(core.KindConflict, codeChallengeUsed, "this passkey prompt was used already or has expired; start again")
	case err != nil:
		return nil, sd, err
	}
	if err := json.Unmarshal(ch.Session, &sd); err != nil {
		return nil, sd, fmt.Errorf("decode webauthn session: %w", err)
	}
	sd.Challenge = clientChallenge
	return ch, sd, nil
}

// passkeyError turns a go-webauthn verification failure into a clear
// refusal; its details go to the log only.
func (c *Console) passkeyError(ctx context.Context, what string, err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		c.log.InfoContext(ctx, "passkey refused", "ceremony", what, "reason", pe.Details)
		return core.Errorf(core.KindForbidden, codePasskeyInvalid, "your passkey's answer could not be verified (%s); try again", pe.Details)
	}
	return err
}

// requireUV refuses an assertion or attestation made without user
// verification (PIN, biometrics): go-webauthn checks it too, since every
// ceremony asks for it, but this says so plainly.
func requireUV(flags protocol.AuthenticatorFlags) error {
	if !flags.HasUserVerified() {
		return core.Errorf(core.KindForbidden, approvals.CodeUserVerification,
			"your passkey did not verify you (no PIN, fingerprint or face check); use a passkey that verifies you")
	}
	return nil
}

// ceremonyRequest is what the script posts to a finish endpoint.
type ceremonyRequest struct {
	Token      string          `json:"token,omitempty"`
	Binding    string          `json:"binding,omitempty"`
	Name       string          `json:"name,omitempty"`
	Next       string          `json:"next,omitempty"`
	Return     string          `json:"return,omitempty"`
	Scopes     []string        `json:"scopes,omitempty"`
	Credential json.RawMessage `json:"credential,omitempty"`
}

// readCeremony decodes a ceremony request. Only JSON is accepted: a
// cross-site HTML form cannot send it, which keeps old browsers (without
// Origin or Sec-Fetch-Site) from being used for login CSRF.
func readCeremony(w http.ResponseWriter, r *http.Request) (*ceremonyRequest, error) {
	if !isJSON(r) {
		return nil, core.Errorf(core.KindUnsupportedMedia, core.CodeUnsupportedContentType, "send the body as application/json")
	}
	var req ceremonyRequest
	if err := web.DecodeJSON(w, r, &req, true); err != nil {
		return nil, err
	}
	return &req, nil
}

func parseAttestation(raw json.RawMessage) (*protocol.ParsedCredentialCreationData, error) {
	if len(raw) == 0 {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "credential is required")
	}
	p, err := protocol.ParseCredentialCreationResponseBytes(raw)
	if err != nil {
		return nil, core.Errorf(core.KindInvalid, codePasskeyInvalid, "the passkey response is malformed")
	}
	return p, nil
}

func parseAssertion(raw json.RawMessage) (*protocol.ParsedCredentialAssertionData, error) {
	if len(raw) == 0 {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "credential is required")
	}
	p, err := protocol.ParseCredentialRequestResponseBytes(raw)
	if err != nil {
		return nil, core.Errorf(core.KindInvalid, codePasskeyInvalid, "the passkey response is malformed")
	}
	return p, nil
}

// newPasskey turns a verified credential into a stored passkey.
func (c *Console) newPasskey(ownerID, name string, cred *webauthn.Credential) *authstate.Passkey {
	var transports []string
	for _, t := range cred.Transport {
		transports = append(transports, string(t))
	}
	name = strings.TrimSpace(name)
	if len(name) > 100 {
		name = name[:100]
	}
	now := c.now()
	return &authstate.Passkey{
		ID: core.NewID(core.PrefixPasskey), OwnerID: ownerID, CredentialID: base64.RawURLEncoding.EncodeToString(cred.ID),
		Name: cmp.Or(name, "Passkey added "+now.Format("2 Jan 2006")), PublicKey: cred.PublicKey,
		AttestationType: cred.AttestationType, AAGUID: cred.Authenticator.AAGUID, SignCount: int64(cred.Authenticator.SignCount),
		Transports: strings.Join(transports, " "), UserVerified: cred.Flags.UserVerified,
		BackupEligible: cred.Flags.BackupEligible, BackupState: cred.Flags.BackupState, CreatedAt: now,
	}
}

// recordUse stores the counter after an assertion; a counter that went
// backwards means a cloned authenticator, and the assertion is refused.
func (c *Console) recordUse(ctx context.Context, cred *webauthn.Credential) (*authstate.Passkey, error) {
	pk, err := c.store.GetPasskeyByCredentialID(ctx, base64.RawURLEncoding.EncodeToString(cred.ID))
	if err != nil {
		return nil, fmt.Errorf("load passkey: %w", err)
	}
	if cred.Authenticator.CloneWarning {
		c.log.WarnContext(ctx, "passkey signature counter went backwards", "passkey_id", pk.ID, "owner_id", pk.OwnerID)
		return nil, core.Errorf(core.KindForbidden, codePasskeyInvalid, "this passkey looks cloned (its counter went backwards); use another passkey or recover your account")
	}
	if err := c.store.RecordPasskeyUse(ctx, pk.ID, int64(cred.Authenticator.SignCount), cred.Flags.BackupState, c.now()); err != nil {
		return nil, err
	}
	return pk, nil
}

func sameString(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

func writeOptions(w http.ResponseWriter, v any) {
	w.Header().Set("Cache-Control", "no-store")
	web.WriteJSON(w, http.StatusOK, v)
}

func writeRedirect(w http.ResponseWriter, to string) {
	w.Header().Set("Cache-Control", "no-store")
	web.WriteJSON(w, http.StatusOK, map[string]string{"redirect": to})
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// webauthnExclusions keeps an authenticator from registering a second
// passkey for an account it already holds one of.
func webauthnExclusions(u *owner) webauthn.RegistrationOption {
	return webauthn.WithExclusions(u.descriptors())
}
