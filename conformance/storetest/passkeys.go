package storetest

import (
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/authstate"
	"github.com/faxhub/faxhub/core/services"
)

// RunPasskeyTests checks authstate.PasskeyStore, which every services.Store of
// faxhub implements too: passkeys, WebAuthn challenges and email tokens.
// RunTests calls it; each subtest uses owners of its own, so they share s.
func RunPasskeyTests(t *testing.T, s services.Store) {
	ps, ok := s.(authstate.PasskeyStore)
	if !ok {
		t.Fatalf("%T does not implement authstate.PasskeyStore", s)
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, s services.Store, ps authstate.PasskeyStore)
	}{
		{"Passkeys", testPasskeys},
		{"PasskeyLastOneConcurrent", testPasskeyLastOneConcurrent},
		{"Challenges", testChallenges},
		{"ChallengeClaimConcurrent", testChallengeClaimConcurrent},
		{"EmailTokens", testEmailTokens},
		{"PurgeWebAuthn", testPurgeWebAuthn},
		{"PasskeysInTx", testPasskeysInTx},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, s, ps) })
	}
}

func newPasskey(t *testing.T, ps authstate.PasskeyStore, o *accounts.Owner, sec int) *authstate.Passkey {
	t.Helper()
	id := core.NewID(core.PrefixPasskey)
	p := &authstate.Passkey{
		ID: id, OwnerID: o.ID, CredentialID: "cred-" + id, Name: "Passkey " + id,
		PublicKey: []byte{0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01}, AttestationType: "none",
		AAGUID:    []byte{0xea, 0x9b, 0x8d, 0x66, 0x4d, 0x01, 0x1d, 0x21, 0x3c, 0xe4, 0xb6, 0xb4, 0x8c, 0xb5, 0x75, 0xd4},
		SignCount: 0, Transports: "internal hybrid", UserVerified: true, BackupEligible: true, CreatedAt: at(sec),
	}
	must(t, ps.CreatePasskey(t.Context(), p))
	return p
}

func testPasskeys(t *testing.T, s services.Store, ps authstate.PasskeyStore) {
	ctx := t.Context()
	a, b := newOwner(t, s), newOwner(t, s)
	p1, p2 := newPasskey(t, ps, a, 1), newPasskey(t, ps, a, 2)
	pb := newPasskey(t, ps, b, 3)
	bare := &authstate.Passkey{ID: core.NewID(core.PrefixPasskey), OwnerID: b.ID, CredentialID: "cred-bare", PublicKey: []byte{1}, CreatedAt: at(4)}
	must(t, ps.CreatePasskey(ctx, bare)) // no AAGUID, no transports

	got, err := ps.GetPasskeyByCredentialID(ctx, p2.CredentialID)
	must(t, err)
	wantEqual(t, "GetPasskeyByCredentialID", got, p2)
	got, err = ps.GetPasskeyByCredentialID(ctx, bare.CredentialID)
	must(t, err)
	wantEqual(t, "passkey without AAGUID", got, bare)
	_, err = ps.GetPasskeyByCredentialID(ctx, "cred-unknown")
	wantErr(t, "GetPasskeyByCredentialID of an unknown id", err, core.ErrNoRows)

	list, err := ps.ListPasskeys(ctx, a.ID)
	must(t, err)
	wantEqual(t, "ListPasskeys, oldest first", list, []authstate.Passkey{*p1, *p2})
	list, err = ps.ListPasskeys(ctx, "own_nobody")
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("ListPasskeys of an owner without passkeys: %d", len(list))
	}

	dup := *pb
	dup.ID, dup.OwnerID = core.NewID(core.PrefixPasskey), a.ID
	wantErr(t, "passkey with a credential id registered to another owner", ps.CreatePasskey(ctx, &dup), core.ErrExists)

	must(t, ps.RenamePasskey(ctx, a.ID, p1.ID, "Laptop"))
	p1.Name = "Laptop"
	wantErr(t, "RenamePasskey by another owner", ps.RenamePasskey(ctx, b.ID, p1.ID, "Stolen"), core.ErrNoRows)
	wantErr(t, "RenamePasskey of a missing passkey", ps.RenamePasskey(ctx, a.ID, "pky_missing", "x"), core.ErrNoRows)

	must(t, ps.RecordPasskeyUse(ctx, p1.ID, 7, true, at(20)))
	p1.SignCount, p1.BackupState, p1.LastUsedAt = 7, true, ptr(at(20))
	got, err = ps.GetPasskeyByCredentialID(ctx, p1.CredentialID)
	must(t, err)
	wantEqual(t, "passkey after rename and use", got, p1)
	wantErr(t, "RecordPasskeyUse of a missing passkey", ps.RecordPasskeyUse(ctx, "pky_missing", 1, false, at(21)), core.ErrNoRows)

	wantErr(t, "DeletePasskey by another owner", ps.DeletePasskey(ctx, b.ID, p1.ID), core.ErrNoRows)
	wantErr(t, "DeletePasskey of a missing passkey", ps.DeletePasskey(ctx, a.ID, "pky_missing"), core.ErrNoRows)
	must(t, ps.DeletePasskey(ctx, a.ID, p2.ID))
	wantErr(t, "DeletePasskey of the last passkey", ps.DeletePasskey(ctx, a.ID, p1.ID), core.ErrConflict)
	wantErr(t, "DeletePasskey twice", ps.DeletePasskey(ctx, a.ID, p2.ID), core.ErrNoRows)
	list, err = ps.ListPasskeys(ctx, a.ID)
	must(t, err)
	wantEqual(t, "passkeys after deletes", list, []authstate.Passkey{*p1})
}

// testPasskeyLastOneConcurrent deletes every passkey of an owner at once:
// all but one delete succeed, whatever the interleaving.
func testPasskeyLastOneConcurrent(t *testing.T, s services.Store, ps authstate.PasskeyStore) {
	ctx := t.Context()
	o := newOwner(t, s)
	const n = 8
	keys := make([]*authstate.Passkey, n)
	for i := range keys {
		keys[i] = newPasskey(t, ps, o, i)
	}
	errs := race(n, func(i int) error { return ps.DeletePasskey(ctx, o.ID, keys[i].ID) })
	ok, refused := countErrs(t, "concurrent DeletePasskey", errs, core.ErrConflict)
	if ok != n-1 || refused != 1 {
		t.Fatalf("concurrent deletes of %d passkeys: %d succeeded, %d refused; want %d and 1", n, ok, refused, n-1)
	}
	list, err := ps.ListPasskeys(ctx, o.ID)
	must(t, err)
	if len(list) != 1 {
		t.Fatalf("%d passkeys left, want 1", len(list))
	}
}

func newChallenge(t *testing.T, ps authstate.PasskeyStore, o *accounts.Owner, purpose string, expiresSec int) *authstate.WebAuthnChallenge {
	t.Helper()
	var owner *string
	if o != nil {
		owner = &o.ID
	}
	c := &authstate.WebAuthnChallenge{
		Hash: core.HashSecret(core.RandomString(32)), Purpose: purpose, OwnerID: owner, Binding: "binding-" + purpose,
		Session: []byte(`{"rpId":"faxhub.test","userVerification":"required"}`), CreatedAt: at(0), ExpiresAt: at(expiresSec),
	}
	must(t, ps.CreateChallenge(t.Context(), c))
	return c
}

func testChallenges(t *testing.T, s services.Store, ps authstate.PasskeyStore) {
	ctx := t.Context()
	o := newOwner(t, s)
	login := newChallenge(t, ps, nil, authstate.ChallengeLogin, 300)
	approval := newChallenge(t, ps, o, authstate.ApprovalChallengePurpose("apr_1"), 300)
	expired := newChallenge(t, ps, nil, authstate.ChallengeLogin, 10)

	wantErr(t, "challenge with a taken hash", ps.CreateChallenge(ctx, &authstate.WebAuthnChallenge{
		Hash: login.Hash, Purpose: authstate.ChallengeLogin, Session: []byte("{}"), CreatedAt: at(0), ExpiresAt: at(1),
	}), core.ErrExists)

	_, err := ps.ClaimChallenge(ctx, approval.Hash, authstate.ApprovalChallengePurpose("apr_2"), at(1))
	wantErr(t, "ClaimChallenge for another approval", err, core.ErrNoRows)
	_, err = ps.ClaimChallenge(ctx, approval.Hash, authstate.ChallengeLogin, at(1))
	wantErr(t, "ClaimChallenge for another purpose", err, core.ErrNoRows)
	_, err = ps.ClaimChallenge(ctx, core.HashSecret("unknown"), authstate.ChallengeLogin, at(1))
	wantErr(t, "ClaimChallenge of an unknown challenge", err, core.ErrNoRows)

	got, err := ps.ClaimChallenge(ctx, approval.Hash, authstate.ApprovalChallengePurpose("apr_1"), at(2))
	must(t, err)
	approval.UsedAt = ptr(at(2))
	wantEqual(t, "claimed challenge", got, approval)
	_, err = ps.ClaimChallenge(ctx, approval.Hash, authstate.ApprovalChallengePurpose("apr_1"), at(3))
	wantErr(t, "ClaimChallenge replayed", err, core.ErrConflict)

	_, err = ps.ClaimChallenge(ctx, expired.Hash, authstate.ChallengeLogin, at(10))
	wantErr(t, "ClaimChallenge at its expiry", err, core.ErrConflict)

	got, err = ps.ClaimChallenge(ctx, login.Hash, authstate.ChallengeLogin, at(299))
	must(t, err)
	login.UsedAt = ptr(at(299))
	wantEqual(t, "claimed sign-in challenge (no owner)", got, login)
}

func testChallengeClaimConcurrent(t *testing.T, s services.Store, ps authstate.PasskeyStore) {
	ctx := t.Context()
	c := newChallenge(t, ps, nil, authstate.ChallengeLogin, 300)
	errs := race(concurrency, func(i int) error {
		_, err := ps.ClaimChallenge(ctx, c.Hash, authstate.ChallengeLogin, at(1))
		return err
	})
	if ok, used := countErrs(t, "concurrent ClaimChallenge", errs, core.ErrConflict); ok != 1 || used != concurrency-1 {
		t.Fatalf("concurrent claims: %d succeeded, %d refused; want 1 and %d", ok, used, concurrency-1)
	}

	tok := newEmailToken(t, ps, authstate.EmailTokenSignup, nil, 300)
	errs = race(concurrency, func(i int) error {
		_, err := ps.ClaimEmailToken(ctx, tok.Hash, authstate.EmailTokenSignup, at(1))
		return err
	})
	if ok, used := countErrs(t, "concurrent ClaimEmailToken", errs, core.ErrConflict); ok != 1 || used != concurrency-1 {
		t.Fatalf("concurrent token claims: %d succeeded, %d refused; want 1 and %d", ok, used, concurrency-1)
	}
}

func newEmailToken(t *testing.T, ps authstate.PasskeyStore, purpose string, o *accounts.Owner, expiresSec int) *authstate.EmailToken {
	t.Helper()
	tk := &authstate.EmailToken{
		Hash: core.HashSecret(core.RandomString(32)), Purpose: purpose, Email: "new@example.com", Name: "New Owner",
		CreatedAt: at(0), ExpiresAt: at(expiresSec),
	}
	if o != nil {
		tk.OwnerID, tk.Email, tk.Name = &o.ID, o.Email, o.Name
	}
	must(t, ps.CreateEmailToken(t.Context(), tk))
	return tk
}

func testEmailTokens(t *testing.T, s services.Store, ps authstate.PasskeyStore) {
	ctx := t.Context()
	a, b := newOwner(t, s), newOwner(t, s)
	signup := newEmailToken(t, ps, authstate.EmailTokenSignup, nil, 3600)
	recovery := newEmailToken(t, ps, authstate.EmailTokenRecovery, a, 3600)
	expired := newEmailToken(t, ps, authstate.EmailTokenRecovery, a, 60)

	got, err := ps.GetEmailToken(ctx, signup.Hash)
	must(t, err)
	wantEqual(t, "GetEmailToken", got, signup)
	_, err = ps.GetEmailToken(ctx, core.HashSecret("unknown"))
	wantErr(t, "GetEmailToken of an unknown token", err, core.ErrNoRows)
	wantErr(t, "email token with a taken hash", ps.CreateEmailToken(ctx, &authstate.EmailToken{
		Hash: signup.Hash, Purpose: authstate.EmailTokenSignup, Email: "x@example.com", CreatedAt: at(0), ExpiresAt: at(1),
	}), core.ErrExists)

	must(t, ps.SetEmailTokenOwner(ctx, signup.Hash, a.ID))
	must(t, ps.SetEmailTokenOwner(ctx, signup.Hash, a.ID)) // the same owner again is fine
	wantErr(t, "SetEmailTokenOwner to another owner", ps.SetEmailTokenOwner(ctx, signup.Hash, b.ID), core.ErrConflict)
	wantErr(t, "SetEmailTokenOwner of an unknown token", ps.SetEmailTokenOwner(ctx, core.HashSecret("unknown"), a.ID), core.ErrNoRows)
	signup.OwnerID = &a.ID

	_, err = ps.ClaimEmailToken(ctx, signup.Hash, authstate.EmailTokenRecovery, at(1))
	wantErr(t, "ClaimEmailToken for another purpose", err, core.ErrNoRows)
	got, err = ps.ClaimEmailToken(ctx, signup.Hash, authstate.EmailTokenSignup, at(2))
	must(t, err)
	signup.UsedAt = ptr(at(2))
	wantEqual(t, "claimed sign-up token", got, signup)
	_, err = ps.ClaimEmailToken(ctx, signup.Hash, authstate.EmailTokenSignup, at(3))
	wantErr(t, "ClaimEmailToken twice", err, core.ErrConflict)

	_, err = ps.ClaimEmailToken(ctx, expired.Hash, authstate.EmailTokenRecovery, at(61))
	wantErr(t, "ClaimEmailToken after expiry", err, core.ErrConflict)
	got, err = ps.ClaimEmailToken(ctx, recovery.Hash, authstate.EmailTokenRecovery, at(61))
	must(t, err)
	recovery.UsedAt = ptr(at(61))
	wantEqual(t, "claimed recovery token", got, recovery)
}

func testPurgeWebAuthn(t *testing.T, s services.Store, ps authstate.PasskeyStore) {
	ctx := t.Context()
	old := newChallenge(t, ps, nil, authstate.ChallengeLogin, 10)
	live := newChallenge(t, ps, nil, authstate.ChallengeLogin, 1000)
	oldTok := newEmailToken(t, ps, authstate.EmailTokenSignup, nil, 10)
	liveTok := newEmailToken(t, ps, authstate.EmailTokenSignup, nil, 1000)
	must(t, ps.PurgeWebAuthn(ctx, at(100)))

	_, err := ps.ClaimChallenge(ctx, old.Hash, authstate.ChallengeLogin, at(5))
	wantErr(t, "purged challenge", err, core.ErrNoRows)
	_, err = ps.ClaimChallenge(ctx, live.Hash, authstate.ChallengeLogin, at(5))
	must(t, err)
	_, err = ps.GetEmailToken(ctx, oldTok.Hash)
	wantErr(t, "purged email token", err, core.ErrNoRows)
	_, err = ps.GetEmailToken(ctx, liveTok.Hash)
	must(t, err)
}

// testPasskeysInTx checks that the claims work inside a caller's
// transaction too, and that a refused claim leaves it usable.
func testPasskeysInTx(t *testing.T, s services.Store, ps authstate.PasskeyStore) {
	ctx := t.Context()
	o := newOwner(t, s)
	c := newChallenge(t, ps, o, authstate.ChallengeRegistration, 300)
	tok := newEmailToken(t, ps, authstate.EmailTokenRecovery, o, 300)
	err := ps.InPasskeyTx(ctx, func(tps authstate.PasskeyQueries) error {
		if _, err := tps.ClaimChallenge(ctx, c.Hash, authstate.ChallengeLogin, at(1)); err == nil {
			t.Error("claim for the wrong purpose succeeded")
		}
		if _, err := tps.ClaimChallenge(ctx, c.Hash, authstate.ChallengeRegistration, at(1)); err != nil {
			return err
		}
		if _, err := tps.ClaimEmailToken(ctx, tok.Hash, authstate.EmailTokenRecovery, at(1)); err != nil {
			return err
		}
		return tps.CreatePasskey(ctx, &authstate.Passkey{
			ID: core.NewID(core.PrefixPasskey), OwnerID: o.ID, CredentialID: "cred-tx-" + o.ID, PublicKey: []byte{1}, CreatedAt: at(1),
		})
	})
	must(t, err)
	_, err = ps.ClaimChallenge(ctx, c.Hash, authstate.ChallengeRegistration, at(2))
	wantErr(t, "challenge claimed in a committed transaction", err, core.ErrConflict)
	list, err := ps.ListPasskeys(ctx, o.ID)
	must(t, err)
	if len(list) != 1 {
		t.Fatalf("%d passkeys after the transaction, want 1", len(list))
	}
}
