package machine

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

	"github.com/faxhub/faxhub/core"
)

const (
	machineStatusSecret = "machine-status"
	maxStatusToken      = 200
	statusMACBytes      = 16
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
	exp := strconv.FormatInt(s.now().Add(s.cfg.StatusTTL).Unix(), 36)
	return s.kernel.URL(core.LinkMachineStatus, nil, "token", faxID+"."+exp+"."+statusMAC(key, faxID, exp)), nil
}

func badStatusToken(why string) error {
	return core.Errorf(core.KindNotFound, CodeStatusToken, "this status link is %s", why)
}

// FaxStatus reads a paid machine fax through the capability token of
// its status URL.
func (s *Service) FaxStatus(ctx context.Context, token string) (*Order, error) {
	if len(token) > maxStatusToken {
		return nil, badStatusToken("malformed")
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 || !core.HasPrefix(parts[0], core.PrefixFax) {
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
	if errors.Is(err, core.ErrNoRows) || (err == nil && f.OwnerID != core.MachineOwnerID) {
		return nil, badStatusToken("for a fax that no longer exists")
	} else if err != nil {
		return nil, fmt.Errorf("read machine fax: %w", err)
	}
	c, err := s.d.Store.GetChargeByFax(ctx, faxID)
	if err != nil {
		return nil, core.StoreErr(err, "charge")
	}
	s.faxes.Present(f, nil)
	o := s.machineOrder(f, &Request{RequestID: c.RequestID}, c, c.Method)
	// The link shown is the one used: a status page does not mint links.
	o.StatusURL = s.kernel.URL(core.LinkMachineStatus, nil, "token", token)
	return &o, nil
}
