package passkeys

import (
	"context"
	"errors"

	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/authstate"
)

// ceremony says what a WebAuthn response must answer: a challenge issued
// for purpose, to owner, with a binding that bound accepts.
type ceremony struct {
	// purpose is the challenge's purpose (authstate.Challenge…, or an
	// approval's).
	purpose string
	// owner is whom the challenge must have been issued to. Empty: a
	// registration takes the challenge's own owner (an email link's), an
	// assertion is a discoverable sign-in that finds its owner by passkey.
	owner string
	// bound checks the challenge's binding (an approval's hash, an email
	// link's) before the response is verified; nil accepts any.
	bound func(ch *authstate.WebAuthnChallenge) error
	// what names the ceremony in logs.
	what string
}

var errOtherAccount = core.Errorf(core.KindForbidden, codeChallengeUnknown, "this passkey prompt was issued to another account; start again")

// claim consumes the challenge the response signed and checks whom and
// what it was issued for.
func (c *Console) claim(ctx context.Context, clientChallenge string, cer ceremony) (*authstate.WebAuthnChallenge, webauthn.SessionData, error) {
	ch, sd, err := c.claimChallenge(ctx, clientChallenge, cer.purpose)
	if err != nil {
		return nil, sd, err
	}
	if cer.owner != "" && (ch.OwnerID == nil || !sameString(*ch.OwnerID, cer.owner)) {
		return nil, sd, errOtherAccount
	}
	if cer.bound != nil {
		if err := cer.bound(ch); err != nil {
			return nil, sd, err
		}
	}
	return ch, sd, nil
}

// finishRegistration is the one finish sequence of a new passkey: parse
// the attestation, claim its challenge, require user verification, verify
// it for the owner. The caller stores the credential.
func (c *Console) finishRegistration(ctx context.Context, req *ceremonyRequest, cer ceremony) (*owner, *webauthn.Credential, error) {
	parsed, err := parseAttestation(req.Credential)
	if err != nil {
		return nil, nil, err
	}
	ch, sd, err := c.claim(ctx, parsed.Response.CollectedClientData.Challenge, cer)
	if err != nil {
		return nil, nil, err
	}
	if ch.OwnerID == nil {
		return nil, nil, errOtherAccount
	}
	if err := requireUV(parsed.Response.AttestationObject.AuthData.Flags); err != nil {
		return nil, nil, err
	}
	u, err := c.loadOwner(ctx, *ch.OwnerID)
	if err != nil {
		return nil, nil, err
	}
	cred, err := c.wa.CreateCredential(u, sd, parsed)
	if err != nil {
		return nil, nil, c.passkeyError(ctx, cer.what, err)
	}
	return u, cred, nil
}

// finishAssertion is the one finish sequence of a passkey assertion: parse
// it, claim its challenge, require user verification, verify it (against
// cer.owner's passkeys, or any registered passkey for a discoverable
// sign-in) and record the passkey's use.
func (c *Console) finishAssertion(ctx context.Context, req *ceremonyRequest, cer ceremony) (*owner, *authstate.WebAuthnChallenge, *authstate.Passkey, error) {
	parsed, err := parseAssertion(req.Credential)
	if err != nil {
		return nil, nil, nil, err
	}
	ch, sd, err := c.claim(ctx, parsed.Response.CollectedClientData.Challenge, cer)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := requireUV(parsed.Response.AuthenticatorData.Flags); err != nil {
		return nil, nil, nil, err
	}
	var (
		u    *owner
		cred *webauthn.Credential
	)
	if cer.owner != "" {
		if u, err = c.loadOwner(ctx, cer.owner); err != nil {
			return nil, nil, nil, err
		}
		cred, err = c.wa.ValidateLogin(u, sd, parsed)
	} else {
		var unknown bool
		lookup := func(rawID, userHandle []byte) (webauthn.User, error) {
			pk, err := c.store.GetPasskeyByCredentialID(ctx, b64(rawID))
			if errors.Is(err, core.ErrNoRows) || (err == nil && !sameString(string(userHandle), pk.OwnerID)) {
				unknown = true
				return nil, errors.New("unknown passkey")
			} else if err != nil {
				return nil, err
			}
			if u, err = c.loadOwner(ctx, pk.OwnerID); err != nil {
				return nil, err
			}
			return u, nil
		}
		_, cred, err = c.wa.ValidatePasskeyLogin(lookup, sd, parsed)
		if unknown {
			return nil, nil, nil, core.Errorf(core.KindForbidden, codePasskeyInvalid, "this passkey is not registered with faxhub (it may have been removed); use another passkey or recover your account")
		}
	}
	if err != nil {
		return nil, nil, nil, c.passkeyError(ctx, cer.what, err)
	}
	pk, err := c.recordUse(ctx, cred)
	if err != nil {
		return nil, nil, nil, err
	}
	return u, ch, pk, nil
}
