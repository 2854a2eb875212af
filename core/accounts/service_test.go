package accounts_test

import (
	"strings"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/internal/testenv"
)

func TestAPIKeys(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	secret, k, err := e.Svc.Accounts.CreateAPIKey(ctx, e.OwnerA.ID, core.ModeTest, "ci")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "fxk_test_") || k.Hash == secret || strings.Contains(k.Hint, secret[9:len(secret)-4]) {
		t.Fatalf("key %s stored as %+v", secret, k)
	}
	p, err := e.Svc.Accounts.AuthenticateAPIKey(ctx, secret)
	if err != nil || p.OwnerID != e.OwnerA.ID || p.Mode != core.ModeTest || len(p.Scopes) != 6 {
		t.Fatalf("principal %+v %v", p, err)
	}
	for _, bad := range []string{"", "fxk_test_nope", "fxk_live_" + secret[9:], "Bearer " + secret} {
		_, err := e.Svc.Accounts.AuthenticateAPIKey(ctx, bad)
		testenv.WantCode(t, err, accounts.CodeInvalidAPIKey)
	}
	keys, _ := e.Svc.Accounts.ListAPIKeys(ctx, e.OwnerA.ID)
	var found *accounts.APIKey
	for i := range keys {
		if keys[i].ID == k.ID {
			found = &keys[i]
		}
	}
	if found == nil || found.LastUsedAt == nil {
		t.Fatalf("last used not recorded: %+v", found)
	}
	testenv.WantCode(t, e.Svc.Accounts.RevokeAPIKey(ctx, e.OwnerB.ID, k.ID), core.CodeNotFound)
	if err := e.Svc.Accounts.RevokeAPIKey(ctx, e.OwnerA.ID, k.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Accounts.AuthenticateAPIKey(ctx, secret)
	testenv.WantCode(t, err, accounts.CodeInvalidAPIKey)
}

func TestSessions(t *testing.T) {
	e := testenv.New(t, testenv.WithoutWorkers())
	secret, s, err := e.Svc.Accounts.CreateSession(ctx, e.OwnerA.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Svc.Accounts.AuthenticateSession(ctx, secret)
	if err != nil || got.ID != s.ID || got.OwnerID != e.OwnerA.ID {
		t.Fatalf("session: %+v %v", got, err)
	}
	if err := e.Svc.Accounts.EndAllSessions(ctx, e.OwnerA.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Svc.Accounts.AuthenticateSession(ctx, secret)
	if core.ErrorCode(err) != core.CodeUnauthenticated {
		t.Fatalf("ended session still valid: %v", err)
	}
}
