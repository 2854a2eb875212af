package accounts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/authstate"
)

// Sign-up and recovery by e-mail link: who gets which link, how long it
// works, that it works once, and how often an address can be mailed. The
// console (passkeys) keeps the pages, the WebAuthn ceremony and the words
// of the mail; it asks these methods what to send and whether a link may be
// used.

// EmailLinkTTL is how long a sign-up or recovery link works.
const EmailLinkTTL = 30 * time.Minute

// nameMax bounds the name given at sign-up (CreateOwner's limit).
const nameMax = 200

// EmailLinkStore keeps the one-time links' hashes (authstate.PasskeyStore
// is one). InPasskeyTx lets spending a link and storing the passkey it
// registers commit together.
type EmailLinkStore interface {
	CreateEmailToken(ctx context.Context, t *authstate.EmailToken) error
	GetEmailToken(ctx context.Context, hash string) (*authstate.EmailToken, error)
	SetEmailTokenOwner(ctx context.Context, hash, ownerID string) error
	InPasskeyTx(ctx context.Context, fn func(authstate.PasskeyQueries) error) error
}

// EmailLink is what StartSignUp or StartRecovery decided to mail.
type EmailLink struct {
	// Email is the normalized address.
	Email string
	// Secret is the one-time token (core.SecretEmailLink) to put in the
	// link; only its hash is stored. Empty when nothing is to be mailed
	// (recovery for an address without an account): the caller answers
	// exactly as if it had mailed, so that no one learns who has an
	// account.
	Secret string
	// Purpose is authstate.EmailTokenSignup or EmailTokenRecovery.
	Purpose string
	// Name is the name given at sign-up, or the owner's.
	Name string
	// Owner is the account a recovery link is for.
	Owner     *Owner
	ExpiresAt time.Time
}

// StartSignUp decides the mail of a sign-up form: a sign-up link for a new
// address, a recovery link for one that has an account already (the
// address's owner learns someone tried; the person at the form learns
// nothing). Refusals: an invalid address (KindInvalid, field "email"), a
// name over 200 characters (KindInvalid, field "name"), too many mails to
// the address (KindRateLimited).
func (s *Service) StartSignUp(ctx context.Context, email, name string) (*EmailLink, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, core.AsError(err).With("field", "email")
	}
	name = strings.TrimSpace(name)
	if len(name) > nameMax {
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "Your name can be at most %d characters.", nameMax).With("field", "name")
	}
	if err := s.allowMail(ctx, email); err != nil {
		return nil, err
	}
	o, err := s.OwnerByEmail(ctx, email)
	switch {
	case err == nil:
		return s.issueLink(ctx, authstate.EmailTokenRecovery, o.Email, o.Name, o)
	case core.ErrorKind(err) == core.KindNotFound:
		return s.issueLink(ctx, authstate.EmailTokenSignup, email, name, nil)
	}
	return nil, fmt.Errorf("sign-up: %w", err)
}

// StartRecovery decides the mail of a recovery form: a recovery link for
// an address with an account, nothing (a link without Secret) for one
// without, so that the answer does not tell them apart. Refusals as
// StartSignUp's.
func (s *Service) StartRecovery(ctx context.Context, email string) (*EmailLink, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, core.AsError(err).With("field", "email")
	}
	if err := s.allowMail(ctx, email); err != nil {
		return nil, err
	}
	o, err := s.OwnerByEmail(ctx, email)
	switch {
	case err == nil:
		return s.issueLink(ctx, authstate.EmailTokenRecovery, o.Email, o.Name, o)
	case core.ErrorKind(err) == core.KindNotFound:
		return &EmailLink{Email: email}, nil
	}
	return nil, fmt.Errorf("recovery: %w", err)
}

// allowMail counts a mail to email (core.LimitConsoleMail), keyed by its
// hash (the bucket's key is stored; the address need not be). Sign-up and
// recovery share the bucket: either can be used to mail a stranger.
func (s *Service) allowMail(ctx context.Context, email string) error {
	err := s.kernel.Allow(ctx, core.LimitConsoleMail, core.HashSecret(email))
	if e := core.AsError(err); err != nil && e.Kind == core.KindRateLimited {
		return core.Errorf(core.KindRateLimited, core.CodeRateLimited, "we sent several mails to this address recently; wait %d minutes and try again", e.RetryAfterSeconds/60+1).
			WithRetryAfter(e.RetryAfterSeconds)
	}
	return err
}

// issueLink stores a new one-time link's hash.
func (s *Service) issueLink(ctx context.Context, purpose, email, name string, o *Owner) (*EmailLink, error) {
	if s.d.Links == nil {
		return nil, errors.New("email links: no link store configured")
	}
	secret := core.SecretEmailLink + core.RandomString(32)
	now := s.now()
	t := &authstate.EmailToken{Hash: core.HashSecret(secret), Purpose: purpose, Email: email, Name: name,
		CreatedAt: now, ExpiresAt: now.Add(EmailLinkTTL)}
	if o != nil {
		t.OwnerID = &o.ID
	}
	if err := s.d.Links.CreateEmailToken(ctx, t); err != nil {
		return nil, fmt.Errorf("store email link: %w", err)
	}
	return &EmailLink{Email: email, Secret: secret, Purpose: purpose, Name: name, Owner: o, ExpiresAt: t.ExpiresAt}, nil
}

func linkInvalid(kind core.Kind, msg string) *core.Error {
	return core.Errorf(kind, CodeLinkInvalid, "%s", msg)
}

// OpenEmailLink returns the link of secret if it can still be used, or
// says why not (CodeLinkInvalid: KindNotFound for a link that never was,
// KindGone for one used or expired). It changes nothing: mail scanners
// open links too.
func (s *Service) OpenEmailLink(ctx context.Context, secret string) (*authstate.EmailToken, error) {
	unknown := linkInvalid(core.KindNotFound, "this link is not valid; check that you copied all of it, or request a new one")
	if !strings.HasPrefix(secret, core.SecretEmailLink) {
		return nil, unknown
	}
	if s.d.Links == nil {
		return nil, errors.New("email links: no link store configured")
	}
	t, err := s.d.Links.GetEmailToken(ctx, core.HashSecret(secret))
	switch {
	case errors.Is(err, core.ErrNoRows):
		return nil, unknown
	case err != nil:
		return nil, fmt.Errorf("read email link: %w", err)
	case t.UsedAt != nil:
		return nil, linkInvalid(core.KindGone, "this link was used already; sign in with your passkey, or request a new link")
	case !s.now().Before(t.ExpiresAt):
		return nil, linkInvalid(core.KindGone, "this link has expired; request a new one")
	}
	return t, nil
}

// EmailLinkOwner returns the owner a link acts for. A sign-up link creates
// its owner, email verified (the link proves it), the first time it is
// asked, so that the passkey about to be registered can name the owner;
// the link keeps that owner for later asks.
func (s *Service) EmailLinkOwner(ctx context.Context, t *authstate.EmailToken) (string, error) {
	if t.OwnerID != nil {
		return *t.OwnerID, nil
	}
	o, err := s.CreateOwner(ctx, t.Email, t.Name, true)
	if err != nil {
		if core.ErrorCode(err) == CodeOwnerExists {
			// Another tab of the same sign-up may have won the race.
			if again, gerr := s.d.Links.GetEmailToken(ctx, t.Hash); gerr == nil && again.OwnerID != nil {
				return *again.OwnerID, nil
			}
			return "", core.Errorf(core.KindConflict, CodeOwnerExists, "an account with %s exists already; sign in, or recover it from the sign-in page", t.Email)
		}
		return "", err
	}
	if err := s.d.Links.SetEmailTokenOwner(ctx, t.Hash, o.ID); err != nil {
		return "", fmt.Errorf("record sign-up owner: %w", err)
	}
	return o.ID, nil
}

// RedeemEmailLink spends link t, once, in the same transaction as register
// (which stores the passkey the link registers), so that a link is spent
// exactly when its passkey is stored. A second redemption is
// CodeLinkInvalid (KindGone). Redeeming a recovery link then ends every
// session of the owner: whoever holds the lost device is signed out.
func (s *Service) RedeemEmailLink(ctx context.Context, t *authstate.EmailToken, register func(authstate.PasskeyQueries) error) error {
	err := s.d.Links.InPasskeyTx(ctx, func(q authstate.PasskeyQueries) error {
		if _, err := q.ClaimEmailToken(ctx, t.Hash, t.Purpose, s.now()); err != nil {
			if errors.Is(err, core.ErrConflict) {
				return linkInvalid(core.KindGone, "this link was used already; sign in with your passkey, or request a new link")
			}
			return fmt.Errorf("spend email link: %w", err)
		}
		return register(q)
	})
	if err != nil {
		return err
	}
	if t.Purpose == authstate.EmailTokenRecovery && t.OwnerID != nil {
		return s.EndAllSessions(ctx, *t.OwnerID)
	}
	return nil
}
