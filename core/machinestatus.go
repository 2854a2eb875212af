package core

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A machine fax's status URL carries its own capability: a payer has no
// account, so the link is the credential. Its token is the fax id, an
// expiry (unix seconds, base 36) and an HMAC-SHA-256 of both under the
// shared "machine-status" secret, truncated to 128 bits, base64url:
// "fax_….<exp>.<mac>" (URL-safe, about 80 characters). Nothing is stored:
// every replica verifies it; it cannot be revoked before it expires
// (Config.Machine.StatusTTL), which is fine for a read-only view of one fax.

const (
	machineStatusSecret = "machine-status"
	// MachineStatusPath is where status links point (rest serves it).
	MachineStatusPath = "/api/v1/machine/faxes/status/"
	maxStatusToken    = 200
	statusMACBytes    = 16
)

func statusMAC(key []byte, faxID, exp string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("faxhub machine status v1|" + faxID + "|" + exp))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:statusMACBytes])
}

// machineStatusURL signs a status link for faxID, valid StatusTTL from now.
func (s *Service) machineStatusURL(ctx context.Context, faxID string) (string, error) {
	key, err := s.d.Store.Secret(ctx, machineStatusSecret)
	if err != nil {
		return "", fmt.Errorf("status key: %w", err)
	}
	exp := strconv.FormatInt(s.now().Add(s.cfg.Machine.StatusTTL).Unix(), 36)
	return s.cfg.APIURL + MachineStatusPath + faxID + "." + exp + "." + statusMAC(key, faxID, exp), nil
}

func badStatusToken(why string) error {
	return Errorf(KindNotFound, CodeMachineStatusToken, "this status link is %s", why)
}

// MachineFaxStatus reads a paid machine fax through the capability token of
// its status URL.
func (s *Service) MachineFaxStatus(ctx context.Context, token string) (*MachineOrder, error) {
	if len(token) > maxStatusToken {
		return nil, badStatusToken("malformed")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || !HasPrefix(parts[0], PrefixFax) {
		return nil, badStatusToken("malformed")
	}
	faxID, exp, mac := parts[0], parts[1], parts[2]
	key, err := s.d.Store.Secret(ctx, machineStatusSecret)
	if err != nil {
		return nil, fmt.Errorf("status key: %w", err)
	}
	if !hmac.Equal([]byte(mac), []byte(statusMAC(key, faxID, exp))) {
		return nil, badStatusToken("not valid")
	}
	unix, err := strconv.ParseInt(exp, 36, 64)
	if err != nil {
		return nil, badStatusToken("malformed")
	}
	if !s.now().Before(time.Unix(unix, 0)) {
		return nil, badStatusToken("expired")
	}
	f, err := s.d.Store.GetFaxByID(ctx, faxID)
	if errors.Is(err, ErrNoRows) || (err == nil && f.OwnerID != MachineOwnerID) {
		return nil, badStatusToken("for a fax that no longer exists")
	} else if err != nil {
		return nil, fmt.Errorf("read machine fax: %w", err)
	}
	c, err := s.d.Store.GetChargeByFax(ctx, faxID)
	if err != nil {
		return nil, storeErr(err, "charge")
	}
	s.present(f, nil)
	o := s.machineOrder(f, &MachineRequest{RequestID: c.RequestID}, c, c.Method)
	// The link shown is the one used: a status page does not mint links.
	o.StatusURL = s.cfg.APIURL + MachineStatusPath + token
	return &o, nil
}
