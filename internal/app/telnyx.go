package app

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/provider/telnyx"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/web"
	telnyxhook "github.com/faxhub/faxhub/rest/webhooks/telnyx"
)

// TelnyxOptions configure Telnyx, live mode's fax and number provider
// (docs/providers.md). With the API key, the connection id and the
// webhook public key, live sends go out through Telnyx, live numbers are
// rented from it and POST /webhooks/telnyx learns what happened; with
// none of them live mode answers provider_not_configured and
// numbers_not_configured. Anything in between is refused at start.
type TelnyxOptions struct {
	APIKey       string // FAXHUB_TELNYX_API_KEY
	ConnectionID string // FAXHUB_TELNYX_CONNECTION_ID
	// PublicKey is the account's webhook signing key, base64 Ed25519.
	PublicKey string // FAXHUB_TELNYX_PUBLIC_KEY
	// APIURL replaces https://api.telnyx.com (the stand-in in tests).
	APIURL string // FAXHUB_TELNYX_API_URL
	// From is the caller id of live faxes sent without one of the
	// owner's numbers (E.164, optional).
	From       string // FAXHUB_TELNYX_FROM
	HTTPClient *http.Client
}

// TelnyxOptionsFromEnv reads the FAXHUB_TELNYX_* variables. They come
// from the environment only: the key is a secret, and a flag would show
// it in the process list.
func TelnyxOptionsFromEnv(getenv func(string) string) TelnyxOptions {
	return TelnyxOptions{
		APIKey: getenv("FAXHUB_TELNYX_API_KEY"), ConnectionID: getenv("FAXHUB_TELNYX_CONNECTION_ID"),
		PublicKey: getenv("FAXHUB_TELNYX_PUBLIC_KEY"), APIURL: getenv("FAXHUB_TELNYX_API_URL"), From: getenv("FAXHUB_TELNYX_FROM"),
	}
}

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// wireTelnyx makes Telnyx live mode's fax and number provider when it is
// configured. The webhook is built on first use of the handler (it needs
// the service, which deps go into).
func (a *App) wireTelnyx(deps *services.Deps) error {
	o := a.Telnyx
	var missing []string
	for _, v := range []struct{ name, val string }{
		{"FAXHUB_TELNYX_API_KEY", o.APIKey}, {"FAXHUB_TELNYX_CONNECTION_ID", o.ConnectionID}, {"FAXHUB_TELNYX_PUBLIC_KEY", o.PublicKey},
	} {
		if v.val == "" {
			missing = append(missing, v.name)
		}
	}
	switch {
	case len(missing) == 3:
		if o.APIURL != "" || o.From != "" {
			return errors.New("app: FAXHUB_TELNYX_API_URL or FAXHUB_TELNYX_FROM is set without FAXHUB_TELNYX_API_KEY, FAXHUB_TELNYX_CONNECTION_ID and FAXHUB_TELNYX_PUBLIC_KEY")
		}
		return nil
	case len(missing) > 0:
		return fmt.Errorf("app: Telnyx is partly configured: %s missing (set all of FAXHUB_TELNYX_API_KEY, FAXHUB_TELNYX_CONNECTION_ID and FAXHUB_TELNYX_PUBLIC_KEY, or none)", strings.Join(missing, ", "))
	}
	pub, err := base64.StdEncoding.DecodeString(strings.TrimSpace(o.PublicKey))
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return errors.New("app: FAXHUB_TELNYX_PUBLIC_KEY is not a base64 Ed25519 public key (32 bytes)")
	}
	if o.From != "" && !e164.MatchString(o.From) {
		return errors.New("app: FAXHUB_TELNYX_FROM is not an E.164 number (+ and digits)")
	}
	p, err := telnyx.New(telnyx.Config{
		APIKey: o.APIKey, ConnectionID: o.ConnectionID, DefaultFrom: o.From, APIURL: o.APIURL,
		HTTPClient: o.HTTPClient, Logger: a.Logger,
	})
	if err != nil {
		return fmt.Errorf("app: %w", err)
	}
	if deps.Providers == nil {
		deps.Providers = map[core.Mode]faxes.Provider{}
	}
	if deps.Numbers == nil {
		deps.Numbers = map[core.Mode]numbers.Provider{}
	}
	if o.From == "" && a.Logger != nil {
		a.Logger.Warn("FAXHUB_TELNYX_FROM is not set: live faxes sent without one of the owner's numbers as from fail with provider_error (Telnyx needs a caller id)")
	}
	deps.Providers[core.ModeLive], deps.Numbers[core.ModeLive] = p, p
	a.telnyxKey = ed25519.PublicKey(pub)
	return nil
}

// telnyxWebhookHandler is the Telnyx webhook, or, without Telnyx
// configured, a 503 that says so (an event sent there changes nothing).
func (a *App) telnyxWebhookHandler() http.Handler {
	if a.telnyxKey != nil {
		return telnyxhook.NewWebhook(telnyxhook.WebhookConfig{PublicKey: a.telnyxKey, Faxes: a.Svc.Faxes, Numbers: a.Svc.Numbers, Inbox: a.Svc.Inbox, Logger: a.Logger})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.WriteProblem(w, web.Problem{
			Type: web.ProblemType(faxes.CodeProviderUnavailable), Title: http.StatusText(http.StatusServiceUnavailable),
			Status: http.StatusServiceUnavailable, Code: faxes.CodeProviderUnavailable,
			Detail: "Telnyx is not configured on this server (FAXHUB_TELNYX_API_KEY, FAXHUB_TELNYX_CONNECTION_ID, FAXHUB_TELNYX_PUBLIC_KEY)",
		})
	})
}
