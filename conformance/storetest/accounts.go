package storetest

import (
	"errors"
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/accounts"
	"github.com/faxhub/faxhub/core/services"
)

func testOwners(t *testing.T, s services.Store) {
	ctx := t.Context()
	o := &accounts.Owner{ID: core.NewID(core.PrefixOwner), Email: "ada@example.com", Name: "Ada", CreatedAt: at(0)}
	must(t, s.CreateOwner(ctx, o))
	verified := &accounts.Owner{ID: core.NewID(core.PrefixOwner), Email: "grace@example.com", EmailVerifiedAt: ptr(at(5)), CreatedAt: at(1)}
	must(t, s.CreateOwner(ctx, verified))

	for _, want := range []*accounts.Owner{o, verified} {
		got, err := s.GetOwner(ctx, want.ID)
		must(t, err)
		wantEqual(t, "GetOwner", got, want)
		got, err = s.GetOwnerByEmail(ctx, want.Email)
		must(t, err)
		wantEqual(t, "GetOwnerByEmail", got, want)
	}

	err := s.CreateOwner(ctx, &accounts.Owner{ID: core.NewID(core.PrefixOwner), Email: o.Email, CreatedAt: at(2)})
	wantErr(t, "owner with a taken email", err, core.ErrExists)
	err = s.CreateOwner(ctx, &accounts.Owner{ID: o.ID, Email: "other@example.com", CreatedAt: at(2)})
	wantErr(t, "owner with a taken id", err, core.ErrExists)
	_, err = s.GetOwnerByEmail(ctx, "other@example.com")
	wantErr(t, "owner of a refused create", err, core.ErrNoRows)

	_, err = s.GetOwner(ctx, "own_missing")
	wantErr(t, "GetOwner of a missing id", err, core.ErrNoRows)
	_, err = s.GetOwnerByEmail(ctx, "nobody@example.com")
	wantErr(t, "GetOwnerByEmail of a missing email", err, core.ErrNoRows)
}

func testAPIKeys(t *testing.T, s services.Store) {
	ctx := t.Context()
	a, b := newOwner(t, s), newOwner(t, s)
	key := func(o *accounts.Owner, mode core.Mode, sec int) *accounts.APIKey {
		id := core.NewID(core.PrefixAPIKey)
		k := &accounts.APIKey{ID: id, OwnerID: o.ID, Mode: mode, Name: "key " + id, Hash: core.HashSecret(id), Hint: "fxk_…" + id[len(id)-4:], CreatedAt: at(sec)}
		must(t, s.CreateAPIKey(ctx, k))
		return k
	}
	k1, k2, k3 := key(a, core.ModeLive, 1), key(a, core.ModeTest, 2), key(a, core.ModeLive, 3)
	kb := key(b, core.ModeLive, 4)

	got, err := s.GetAPIKeyByHash(ctx, k2.Hash)
	must(t, err)
	wantEqual(t, "GetAPIKeyByHash", got, k2)
	_, err = s.GetAPIKeyByHash(ctx, core.HashSecret("unknown"))
	wantErr(t, "GetAPIKeyByHash of an unknown hash", err, core.ErrNoRows)

	list, err := s.ListAPIKeys(ctx, a.ID)
	must(t, err)
	wantEqual(t, "ListAPIKeys, newest first", list, []accounts.APIKey{*k3, *k2, *k1})
	list, err = s.ListAPIKeys(ctx, "own_nobody")
	must(t, err)
	if len(list) != 0 {
		t.Fatalf("ListAPIKeys of an owner without keys: %d keys", len(list))
	}

	dup := *kb
	dup.ID = core.NewID(core.PrefixAPIKey)
	wantErr(t, "key with a taken hash", s.CreateAPIKey(ctx, &dup), core.ErrExists)

	// Each key is read before it changes, so that a store which keeps
	// what it read (SQLite's key cache) is seen to answer the change.
	for _, k := range []*accounts.APIKey{k1, k3} {
		got, err = s.GetAPIKeyByHash(ctx, k.Hash)
		must(t, err)
		wantEqual(t, "GetAPIKeyByHash before a change", got, k)
	}
	must(t, s.TouchAPIKey(ctx, k1.ID, at(10)))
	k1.LastUsedAt = ptr(at(10))
	got, err = s.GetAPIKeyByHash(ctx, k1.Hash)
	must(t, err)
	wantEqual(t, "key after TouchAPIKey", got, k1)
	wantErr(t, "TouchAPIKey of a missing key", s.TouchAPIKey(ctx, "key_missing", at(10)), core.ErrNoRows)

	wantErr(t, "RevokeAPIKey by another owner", s.RevokeAPIKey(ctx, b.ID, k1.ID, at(11)), core.ErrNoRows)
	must(t, s.RevokeAPIKey(ctx, a.ID, k1.ID, at(11)))
	wantErr(t, "RevokeAPIKey twice", s.RevokeAPIKey(ctx, a.ID, k1.ID, at(12)), core.ErrNoRows)
	wantErr(t, "RevokeAPIKey of a missing key", s.RevokeAPIKey(ctx, a.ID, "key_missing", at(12)), core.ErrNoRows)
	k1.RevokedAt = ptr(at(11))
	got, err = s.GetAPIKeyByHash(ctx, k1.Hash)
	must(t, err)
	wantEqual(t, "key after RevokeAPIKey (first revocation time kept)", got, k1)

	// A revocation inside a transaction is seen once it commits, and not
	// at all if it rolls back.
	errRollback := errors.New("roll back")
	err = inTx(ctx, s, func(tx services.Tx) error {
		if err := tx.RevokeAPIKey(ctx, a.ID, k3.ID, at(13)); err != nil {
			return err
		}
		return errRollback
	})
	wantErr(t, "InTx that revokes and rolls back", err, errRollback)
	got, err = s.GetAPIKeyByHash(ctx, k3.Hash)
	must(t, err)
	wantEqual(t, "key after a revocation rolled back", got, k3)
	must(t, inTx(ctx, s, func(tx services.Tx) error { return tx.RevokeAPIKey(ctx, a.ID, k3.ID, at(13)) }))
	k3.RevokedAt = ptr(at(13))
	got, err = s.GetAPIKeyByHash(ctx, k3.Hash)
	must(t, err)
	wantEqual(t, "key after a revocation in a transaction", got, k3)
}

func testSessions(t *testing.T, s services.Store) {
	ctx := t.Context()
	a, b := newOwner(t, s), newOwner(t, s)
	session := func(o *accounts.Owner) *accounts.Session {
		id := core.NewID(core.PrefixSession)
		ss := &accounts.Session{
			ID: id, Hash: core.HashSecret(id), OwnerID: o.ID, CreatedAt: at(0), LastSeenAt: at(0),
			ExpiresAt: at(14 * 24 * 3600), UserAgent: "Mozilla/5.0 (conformance)",
		}
		must(t, s.CreateSession(ctx, ss))
		return ss
	}
	s1, s2, s3 := session(a), session(a), session(b)

	got, err := s.GetSessionByHash(ctx, s1.Hash)
	must(t, err)
	wantEqual(t, "GetSessionByHash", got, s1)
	_, err = s.GetSessionByHash(ctx, core.HashSecret("unknown"))
	wantErr(t, "GetSessionByHash of an unknown hash", err, core.ErrNoRows)

	dup := *s2
	dup.ID = core.NewID(core.PrefixSession)
	wantErr(t, "session with a taken hash", s.CreateSession(ctx, &dup), core.ErrExists)

	must(t, s.TouchSession(ctx, s1.ID, at(60)))
	s1.LastSeenAt = at(60)
	got, err = s.GetSessionByHash(ctx, s1.Hash)
	must(t, err)
	wantEqual(t, "session after TouchSession", got, s1)
	wantErr(t, "TouchSession of a missing session", s.TouchSession(ctx, "ses_missing", at(60)), core.ErrNoRows)

	must(t, s.DeleteSession(ctx, s1.ID))
	_, err = s.GetSessionByHash(ctx, s1.Hash)
	wantErr(t, "deleted session", err, core.ErrNoRows)
	must(t, s.DeleteSession(ctx, s1.ID)) // signing out twice is fine

	must(t, s.DeleteOwnerSessions(ctx, a.ID))
	_, err = s.GetSessionByHash(ctx, s2.Hash)
	wantErr(t, "session of an owner signed out everywhere", err, core.ErrNoRows)
	got, err = s.GetSessionByHash(ctx, s3.Hash)
	must(t, err)
	wantEqual(t, "another owner's session", got, s3)
}
