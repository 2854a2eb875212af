package core

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"
)

// Session lifetimes: a session ends after IdleTimeout without use or
// AbsoluteTimeout after sign-in, whichever comes first.
const (
	SessionIdleTimeout     = 24 * time.Hour
	SessionAbsoluteTimeout = 14 * 24 * time.Hour
	// touchEvery bounds last-used writes (sessions, API keys, grants,
	// agent registrations) to one per minute per credential.
	TouchEvery = time.Minute
)

// NormalizeEmail lower-cases and checks an address.
func NormalizeEmail(email string) (string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > 254 {
		return "", Errorf(KindInvalid, CodeInvalidRequest, "%q is not a valid email address", email)
	}
	return email, nil
}

// CreateOwner creates an owner. verified marks the email verified now (the
// operator command creates verified owners).
func (s *Service) CreateOwner(ctx context.Context, email, name string, verified bool) (*Owner, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	name = strings.TrimSpace(name)
	if len(name) > 200 {
		return nil, Errorf(KindInvalid, CodeInvalidRequest, "name is longer than 200 characters")
	}
	o := &Owner{ID: NewID(PrefixOwner), Email: email, Name: name, CreatedAt: s.now()}
	if verified {
		t := o.CreatedAt
		o.EmailVerifiedAt = &t
	}
	if err := s.d.Store.CreateOwner(ctx, o); err != nil {
		if errors.Is(err, ErrExists) {
			return nil, Errorf(KindConflict, CodeOwnerExists, "an owner with email %s already exists", email)
		}
		return nil, fmt.Errorf("create owner: %w", err)
	}
	return o, nil
}

// OwnerByEmail finds an owner.
func (s *Service) OwnerByEmail(ctx context.Context, email string) (*Owner, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	o, err := s.d.Store.GetOwnerByEmail(ctx, email)
	if err == nil && o.ID == MachineOwnerID {
		// The paying machines' owner is no one's to sign in as or claim.
		return nil, NotFound("owner")
	}
	return o, StoreErr(err, "owner")
}

// APIKeyPrefix returns the visible prefix of keys of a mode.
func APIKeyPrefix(m Mode) string { return SecretAPIKey + string(m) + "_" }

// CreateAPIKey issues a key for an owner and returns its secret, which is
// never stored or shown again.
func (s *Service) CreateAPIKey(ctx context.Context, ownerID string, mode Mode, name string) (secret string, key *APIKey, err error) {
	if _, err := ParseMode(string(mode)); err != nil {
		return "", nil, err
	}
	if len(name) > 100 {
		return "", nil, Errorf(KindInvalid, CodeInvalidRequest, "name is longer than 100 characters")
	}
	secret = APIKeyPrefix(mode) + RandomString(24)
	key = &APIKey{
		ID: NewID(PrefixAPIKey), OwnerID: ownerID, Mode: mode, Name: strings.TrimSpace(name),
		Hash: HashSecret(secret), Hint: APIKeyPrefix(mode) + "…" + secret[len(secret)-4:],
		CreatedAt: s.now(),
	}
	if err := s.d.Store.CreateAPIKey(ctx, key); err != nil {
		return "", nil, fmt.Errorf("create api key: %w", err)
	}
	return secret, key, nil
}

// ListAPIKeys lists an owner's keys (without secrets).
func (s *Service) ListAPIKeys(ctx context.Context, ownerID string) ([]APIKey, error) {
	keys, err := s.d.Store.ListAPIKeys(ctx, ownerID)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return keys, nil
}

// RevokeAPIKey revokes one of the owner's keys; further use is refused at
// once on every replica.
func (s *Service) RevokeAPIKey(ctx context.Context, ownerID, id string) error {
	return StoreErr(s.d.Store.RevokeAPIKey(ctx, ownerID, id, s.now()), "api key")
}

// AuthenticateAPIKey turns a presented secret into a Principal. API keys
// carry every scope of their mode.
func (s *Service) AuthenticateAPIKey(ctx context.Context, secret string) (Principal, error) {
	bad := Errorf(KindUnauthenticated, CodeInvalidAPIKey, "the API key is not valid or has been revoked")
	var mode Mode
	switch {
	case strings.HasPrefix(secret, APIKeyPrefix(ModeLive)):
		mode = ModeLive
	case strings.HasPrefix(secret, APIKeyPrefix(ModeTest)):
		mode = ModeTest
	default:
		return Principal{}, bad
	}
	k, err := s.d.Store.GetAPIKeyByHash(ctx, HashSecret(secret))
	if errors.Is(err, ErrNoRows) {
		return Principal{}, bad
	} else if err != nil {
		return Principal{}, fmt.Errorf("look up api key: %w", err)
	}
	if k.RevokedAt != nil || k.Mode != mode {
		return Principal{}, bad
	}
	now := s.now()
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) > TouchEvery {
		// Best effort: a failed last-used write must not fail the request.
		if err := s.d.Store.TouchAPIKey(ctx, k.ID, now); err != nil {
			s.d.Logger.WarnContext(ctx, "touch api key", "key_id", k.ID, "err", err)
		}
	}
	return s.NewPrincipal(PrincipalAPIKey, k.OwnerID, FaxScopes(), k.ID, "", "", k.Mode), nil
}

// CreateSession signs an owner in and returns the cookie secret.
func (s *Service) CreateSession(ctx context.Context, ownerID, userAgent string) (secret string, sess *Session, err error) {
	secret = SecretSession + RandomString(32)
	now := s.now()
	sess = &Session{
		ID: NewID(PrefixSession), Hash: HashSecret(secret), OwnerID: ownerID,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(SessionAbsoluteTimeout),
		UserAgent: CutUTF8(userAgent, 255),
	}
	if err := s.d.Store.CreateSession(ctx, sess); err != nil {
		return "", nil, fmt.Errorf("create session: %w", err)
	}
	return secret, sess, nil
}

// AuthenticateSession returns the live session for a cookie secret.
func (s *Service) AuthenticateSession(ctx context.Context, secret string) (*Session, error) {
	bad := Errorf(KindUnauthenticated, CodeUnauthenticated, "not signed in")
	if !strings.HasPrefix(secret, SecretSession) {
		return nil, bad
	}
	sess, err := s.d.Store.GetSessionByHash(ctx, HashSecret(secret))
	if errors.Is(err, ErrNoRows) {
		return nil, bad
	} else if err != nil {
		return nil, fmt.Errorf("look up session: %w", err)
	}
	now := s.now()
	if now.After(sess.ExpiresAt) || now.Sub(sess.LastSeenAt) > SessionIdleTimeout {
		_ = s.d.Store.DeleteSession(ctx, sess.ID)
		return nil, bad
	}
	if now.Sub(sess.LastSeenAt) > TouchEvery {
		if err := s.d.Store.TouchSession(ctx, sess.ID, now); err != nil {
			s.d.Logger.WarnContext(ctx, "touch session", "session_id", sess.ID, "err", err)
		}
	}
	return sess, nil
}

// EndSession signs one session out; EndAllSessions signs the owner out
// everywhere.
func (s *Service) EndSession(ctx context.Context, id string) error {
	return s.d.Store.DeleteSession(ctx, id)
}

// EndAllSessions deletes every session of the owner.
func (s *Service) EndAllSessions(ctx context.Context, ownerID string) error {
	return s.d.Store.DeleteOwnerSessions(ctx, ownerID)
}

// CutUTF8 cuts s to at most n bytes without splitting a character: a cut
// rune would be invalid UTF-8, which PostgreSQL refuses in a text column.
func CutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
