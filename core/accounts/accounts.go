// Package accounts is owners and the credentials they sign in or call
// with: their API keys (secret shown once, stored hashed, mode by prefix)
// and their browser sessions (idle and absolute timeouts).
package accounts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
)

// Session lifetimes: a session ends after IdleTimeout without use or
// AbsoluteTimeout after sign-in, whichever comes first.
const (
	SessionIdleTimeout     = 24 * time.Hour
	SessionAbsoluteTimeout = 14 * 24 * time.Hour
)

// NormalizeEmail lower-cases and checks an address.
func NormalizeEmail(email string) (string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > 254 {
		return "", core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "%q is not a valid email address", email)
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
		return nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "name is longer than 200 characters")
	}
	o := &Owner{ID: core.NewID(core.PrefixOwner), Email: email, Name: name, CreatedAt: s.now()}
	if verified {
		t := o.CreatedAt
		o.EmailVerifiedAt = &t
	}
	if err := s.d.Store.CreateOwner(ctx, o); err != nil {
		if errors.Is(err, core.ErrExists) {
			return nil, core.Errorf(core.KindConflict, CodeOwnerExists, "an owner with email %s already exists", email)
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
	if err == nil && o.ID == core.MachineOwnerID {
		// The paying machines' owner is no one's to sign in as or claim.
		return nil, core.NotFound("owner")
	}
	return o, core.StoreErr(err, "owner")
}

// APIKeyPrefix returns the visible prefix of keys of a mode.
func APIKeyPrefix(m core.Mode) string { return core.SecretAPIKey + string(m) + "_" }

// CreateAPIKey issues a key for an owner and returns its secret, which is
// never stored or shown again.
func (s *Service) CreateAPIKey(ctx context.Context, ownerID string, mode core.Mode, name string) (secret string, key *APIKey, err error) {
	if _, err := core.ParseMode(string(mode)); err != nil {
		return "", nil, err
	}
	if len(name) > 100 {
		return "", nil, core.Errorf(core.KindInvalid, core.CodeInvalidRequest, "name is longer than 100 characters")
	}
	secret = APIKeyPrefix(mode) + core.RandomString(24)
	key = &APIKey{
		ID: core.NewID(core.PrefixAPIKey), OwnerID: ownerID, Mode: mode, Name: strings.TrimSpace(name),
		Hash: core.HashSecret(secret), Hint: APIKeyPrefix(mode) + "…" + secret[len(secret)-4:],
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
	return core.StoreErr(s.d.Store.RevokeAPIKey(ctx, ownerID, id, s.now()), "api key")
}

// AuthenticateAPIKey turns a presented secret into a Principal. API keys
// carry every scope of their mode.
func (s *Service) AuthenticateAPIKey(ctx context.Context, secret string) (core.Principal, error) {
	bad := core.Errorf(core.KindUnauthenticated, CodeInvalidAPIKey, "the API key is not valid or has been revoked")
	var mode core.Mode
	switch {
	case strings.HasPrefix(secret, APIKeyPrefix(core.ModeLive)):
		mode = core.ModeLive
	case strings.HasPrefix(secret, APIKeyPrefix(core.ModeTest)):
		mode = core.ModeTest
	default:
		return core.Principal{}, bad
	}
	k, err := s.d.Store.GetAPIKeyByHash(ctx, core.HashSecret(secret))
	if errors.Is(err, core.ErrNoRows) {
		return core.Principal{}, bad
	} else if err != nil {
		return core.Principal{}, fmt.Errorf("look up api key: %w", err)
	}
	if k.RevokedAt != nil || k.Mode != mode {
		return core.Principal{}, bad
	}
	now := s.now()
	if k.LastUsedAt == nil || now.Sub(*k.LastUsedAt) > core.TouchEvery {
		// Best effort: a failed last-used write must not fail the request.
		if err := s.d.Store.TouchAPIKey(ctx, k.ID, now); err != nil {
			s.d.Logger.WarnContext(ctx, "touch api key", "key_id", k.ID, "err", err)
		}
	}
	p := s.kernel.NewPrincipal(core.PrincipalAPIKey, k.OwnerID, core.FaxScopes(), k.ID, "", "", k.Mode)
	// The key's name, for what it did (the door of a fax): never its secret.
	p.ClientName = k.Name
	return p, nil
}

// CreateSession signs an owner in and returns the cookie secret.
func (s *Service) CreateSession(ctx context.Context, ownerID, userAgent string) (secret string, sess *Session, err error) {
	secret = core.SecretSession + core.RandomString(32)
	now := s.now()
	sess = &Session{
		ID: core.NewID(core.PrefixSession), Hash: core.HashSecret(secret), OwnerID: ownerID,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(SessionAbsoluteTimeout),
		UserAgent: core.CutUTF8(userAgent, 255),
	}
	if err := s.d.Store.CreateSession(ctx, sess); err != nil {
		return "", nil, fmt.Errorf("create session: %w", err)
	}
	return secret, sess, nil
}

// AuthenticateSession returns the live session for a cookie secret.
func (s *Service) AuthenticateSession(ctx context.Context, secret string) (*Session, error) {
	bad := core.Errorf(core.KindUnauthenticated, core.CodeUnauthenticated, "not signed in")
	if !strings.HasPrefix(secret, core.SecretSession) {
		return nil, bad
	}
	sess, err := s.d.Store.GetSessionByHash(ctx, core.HashSecret(secret))
	if errors.Is(err, core.ErrNoRows) {
		return nil, bad
	} else if err != nil {
		return nil, fmt.Errorf("look up session: %w", err)
	}
	now := s.now()
	if now.After(sess.ExpiresAt) || now.Sub(sess.LastSeenAt) > SessionIdleTimeout {
		_ = s.d.Store.DeleteSession(ctx, sess.ID)
		return nil, bad
	}
	if now.Sub(sess.LastSeenAt) > core.TouchEvery {
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

// Store keeps owners, API keys and sessions.
type Store interface {
	core.Tx
	Queries
}

// Deps are the ports accounts drive.
type Deps struct {
	Store  Store
	Logger *slog.Logger
	// Core builds principals.
	Kernel *core.Kernel
	// Links keeps sign-up and recovery links (nil: those methods fail).
	Links EmailLinkStore
}

// Service keeps accounts.
type Service struct {
	cfg    core.Config
	d      Deps
	kernel *core.Kernel
}

// New returns the service; cfg is the kernel's configuration with its
// defaults applied.
func New(cfg core.Config, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg, d: d, kernel: d.Kernel}
}

func (s *Service) now() time.Time { return core.Clock(s.cfg.Now).Now() }
