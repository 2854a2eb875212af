package core

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A signed link is a capability in a URL path: "<id>.<exp>.<mac>", the
// id of what it opens, its expiry (unix seconds, base 36) and an
// HMAC-SHA-256 of purpose, id and expiry under a server secret shared by
// every replica, truncated to 128 bits, base64url. Nothing is stored;
// every replica verifies it; it works until it expires. The inbox's
// download links and the media links providers fetch are signed links.
//
// (Machine status links, core/machine/status.go, predate this and keep
// their own format so links already handed out keep working.)

const (
	maxSignedLink   = 200
	signedLinkBytes = 16
)

func linkMAC(key []byte, purpose, id, exp string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("faxhub link v1|" + purpose + "|" + id + "|" + exp))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:signedLinkBytes])
}

// signLink returns the token of a link to id for purpose, valid ttl from
// now, and its expiry.
func (s *Kernel) SignLink(ctx context.Context, secret, purpose, id string, ttl time.Duration) (string, time.Time, error) {
	key, err := s.d.Store.Secret(ctx, secret)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("%s link key: %w", purpose, err)
	}
	at := s.now().Add(ttl).Truncate(time.Second)
	exp := strconv.FormatInt(at.Unix(), 36)
	return id + "." + exp + "." + linkMAC(key, purpose, id, exp), at, nil
}

// openLink verifies token for purpose and returns the id it names; bad is
// the error for a malformed, forged or expired token.
func (s *Kernel) OpenLink(ctx context.Context, secret, purpose, prefix, token string, bad func(why string) error) (string, error) {
	if len(token) > maxSignedLink {
		return "", bad("malformed")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || !HasPrefix(parts[0], prefix) {
		return "", bad("malformed")
	}
	id, exp, mac := parts[0], parts[1], parts[2]
	key, err := s.d.Store.Secret(ctx, secret)
	if err != nil {
		return "", fmt.Errorf("%s link key: %w", purpose, err)
	}
	if !hmac.Equal([]byte(mac), []byte(linkMAC(key, purpose, id, exp))) {
		return "", bad("not valid")
	}
	unix, err := strconv.ParseInt(exp, 36, 64)
	if err != nil {
		return "", bad("malformed")
	}
	if !s.now().Before(time.Unix(unix, 0)) {
		return "", bad("expired")
	}
	return id, nil
}
