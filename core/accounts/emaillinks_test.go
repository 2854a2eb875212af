package accounts_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/internal/testenv"
)

var ctx = context.Background()

// Who gets which link: a new address a sign-up link, an address with an
// account a recovery link from either form, an unknown address nothing from
// the recovery form; refusals name the field.
func TestStartEmailLinks(t *testing.T) {
	e, clk := testenv.Clocked(t)
	for _, tc := range []struct {
		name, form, email, nameIn string
		wantPurpose               string // "" : nothing to mail
		wantOwner                 bool
		wantKind                  core.Kind
		wantField                 string
	}{
		{"new address signs up", "signup", "  New@Example.com ", "Ada", authstate.EmailTokenSignup, false, 0, ""},
		{"existing address gets recovery from sign-up", "signup", e.OwnerA.Email, "Mallory", authstate.EmailTokenRecovery, true, 0, ""},
		{"existing address recovers", "recover", strings.ToUpper(e.OwnerA.Email), "", authstate.EmailTokenRecovery, true, 0, ""},
		{"unknown address: nothing, no error", "recover", "nobody@example.com", "", "", false, 0, ""},
		{"invalid address at sign-up", "signup", "not an address", "", "", false, core.KindInvalid, "email"},
		{"invalid address at recovery", "recover", "@", "", "", false, core.KindInvalid, "email"},
		{"name too long", "signup", "long@example.com", strings.Repeat("n", 201), "", false, core.KindInvalid, "name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var link *accounts.EmailLink
			var err error
			if tc.form == "signup" {
				link, err = e.Svc.Accounts.StartSignUp(ctx, tc.email, tc.nameIn)
			} else {
				link, err = e.Svc.Accounts.StartRecovery(ctx, tc.email)
			}
			if tc.wantKind != 0 {
				if ce := core.AsError(err); err == nil || ce.Kind != tc.wantKind || ce.Fields["field"] != tc.wantField {
					t.Fatalf("= %+v, %v; want kind %v on %s", link, err, tc.wantKind, tc.wantField)
				}
				return
			}
			if err != nil || link.Email != strings.ToLower(strings.TrimSpace(tc.email)) || link.Purpose != tc.wantPurpose || (link.Owner != nil) != tc.wantOwner {
				t.Fatalf("= %+v, %v", link, err)
			}
			if tc.wantPurpose == "" {
				if link.Secret != "" {
					t.Fatalf("a link for an unknown address: %+v", link)
				}
				return
			}
			if !strings.HasPrefix(link.Secret, core.SecretEmailLink) || !link.ExpiresAt.Equal(clk.Now().Add(accounts.EmailLinkTTL)) {
				t.Fatalf("link = %+v", link)
			}
			got, err := e.Svc.Accounts.OpenEmailLink(ctx, link.Secret)
			if err != nil || got.Purpose != tc.wantPurpose || got.Email != link.Email || (got.OwnerID != nil) != tc.wantOwner {
				t.Fatalf("open = %+v, %v", got, err)
			}
		})
	}
}

// Three mails to an address at once, then one every ten minutes; sign-up
// and recovery share the count, and other addresses are not affected.
func TestEmailLinkMailRate(t *testing.T) {
	e, clk := testenv.Clocked(t)
	addr := "rate@example.com"
	for i := range 3 {
		start := e.Svc.Accounts.StartRecovery
		if i%2 == 0 {
			start = func(ctx context.Context, email string) (*accounts.EmailLink, error) {
				return e.Svc.Accounts.StartSignUp(ctx, email, "")
			}
		}
		if _, err := start(ctx, addr); err != nil {
			t.Fatalf("mail %d: %v", i+1, err)
		}
	}
	_, err := e.Svc.Accounts.StartRecovery(ctx, addr)
	if ce := core.AsError(err); ce.Kind != core.KindRateLimited || ce.Code != core.CodeRateLimited || !strings.Contains(ce.Message, "wait") {
		t.Fatalf("fourth mail: %v", err)
	}
	_, err = e.Svc.Accounts.StartSignUp(ctx, strings.ToUpper(addr), "")
	testenv.WantCode(t, err, core.CodeRateLimited)
	if _, err := e.Svc.Accounts.StartSignUp(ctx, "other@example.com", ""); err != nil {
		t.Fatalf("another address: %v", err)
	}
	clk.Advance(10 * time.Minute)
	if _, err := e.Svc.Accounts.StartRecovery(ctx, addr); err != nil {
		t.Fatalf("after ten minutes: %v", err)
	}
}

// A link works until it expires, once.
func TestOpenEmailLink(t *testing.T) {
	e, clk := testenv.Clocked(t)
	link, err := e.Svc.Accounts.StartSignUp(ctx, "open@example.com", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, secret string
		kind         core.Kind
	}{
		{"not a link token", "abc", core.KindNotFound},
		{"empty", "", core.KindNotFound},
		{"never issued", core.SecretEmailLink + "nope", core.KindNotFound},
	} {
		_, err := e.Svc.Accounts.OpenEmailLink(ctx, tc.secret)
		if ce := core.AsError(err); ce.Code != accounts.CodeLinkInvalid || ce.Kind != tc.kind {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	clk.Advance(accounts.EmailLinkTTL - time.Second)
	if _, err := e.Svc.Accounts.OpenEmailLink(ctx, link.Secret); err != nil {
		t.Fatalf("just before expiry: %v", err)
	}
	clk.Advance(time.Second)
	_, err = e.Svc.Accounts.OpenEmailLink(ctx, link.Secret)
	if ce := core.AsError(err); ce.Code != accounts.CodeLinkInvalid || ce.Kind != core.KindGone || !strings.Contains(ce.Message, "expired") {
		t.Fatalf("expired: %v", err)
	}
}

// A sign-up link creates its owner (verified) once; redeeming spends it
// once, with the work done in its transaction.
func TestRedeemSignUpLink(t *testing.T) {
	e, _ := testenv.Clocked(t)
	link, err := e.Svc.Accounts.StartSignUp(ctx, "redeem@example.com", "Grace")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := e.Svc.Accounts.OpenEmailLink(ctx, link.Secret)
	if err != nil {
		t.Fatal(err)
	}
	ownerID, err := e.Svc.Accounts.EmailLinkOwner(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	o, err := e.Svc.Accounts.Owner(ctx, ownerID)
	if err != nil || o.Email != "redeem@example.com" || o.Name != "Grace" || o.EmailVerifiedAt == nil {
		t.Fatalf("owner = %+v, %v", o, err)
	}
	// A second tab of the same sign-up finds the same owner.
	if again, err := e.Svc.Accounts.EmailLinkOwner(ctx, tok); err != nil || again != ownerID {
		t.Fatalf("second ask = %q, %v", again, err)
	}
	// A failing registration spends nothing.
	boom := core.Errorf(core.KindConflict, "test_boom", "no")
	if err := e.Svc.Accounts.RedeemEmailLink(ctx, tok, func(authstate.PasskeyQueries) error { return boom }); core.ErrorCode(err) != "test_boom" {
		t.Fatalf("failing register: %v", err)
	}
	ran := 0
	register := func(authstate.PasskeyQueries) error { ran++; return nil }
	if err := e.Svc.Accounts.RedeemEmailLink(ctx, tok, register); err != nil || ran != 1 {
		t.Fatalf("redeem: %v (ran %d)", err, ran)
	}
	err = e.Svc.Accounts.RedeemEmailLink(ctx, tok, register)
	if ce := core.AsError(err); ce.Code != accounts.CodeLinkInvalid || ce.Kind != core.KindGone || ran != 1 {
		t.Fatalf("second redeem: %v (ran %d)", err, ran)
	}
	_, err = e.Svc.Accounts.OpenEmailLink(ctx, link.Secret)
	if ce := core.AsError(err); ce.Code != accounts.CodeLinkInvalid || ce.Kind != core.KindGone || !strings.Contains(ce.Message, "used") {
		t.Fatalf("open after use: %v", err)
	}
}

// Redeeming a recovery link signs the owner out everywhere.
func TestRedeemRecoveryLinkEndsSessions(t *testing.T) {
	e, _ := testenv.Clocked(t)
	secret, _, err := e.Svc.Accounts.CreateSession(ctx, e.OwnerA.ID, "lost phone")
	if err != nil {
		t.Fatal(err)
	}
	link, err := e.Svc.Accounts.StartRecovery(ctx, e.OwnerA.Email)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := e.Svc.Accounts.OpenEmailLink(ctx, link.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := e.Svc.Accounts.EmailLinkOwner(ctx, tok); err != nil || id != e.OwnerA.ID {
		t.Fatalf("owner = %q, %v", id, err)
	}
	if err := e.Svc.Accounts.RedeemEmailLink(ctx, tok, func(authstate.PasskeyQueries) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if s, err := e.Svc.Accounts.AuthenticateSession(ctx, secret); err == nil && s != nil {
		t.Fatalf("the lost phone's session survived: %+v", s)
	}
}
