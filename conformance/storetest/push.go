package storetest

import (
	"testing"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/services"
	"github.com/faxhub/faxhub/core/tasks"
)

// testPushConfigs: configs read back exactly, only by their owner and
// task; a config id is taken once per task; an event's subject finds the
// configs of the tasks that follow it (a fax task through the draft its
// fax was paid from), in its owner and mode only; purge goes by age.
func testPushConfigs(t *testing.T, s services.Store) {
	ctx := t.Context()
	o, other := newOwner(t, s), newOwner(t, s)
	doc := newDocument(t, s, o, core.ModeTest)
	d, unpaid := newDraft(t, s, doc), newDraft(t, s, doc)
	task := func(subject string) *tasks.Task {
		tk := &tasks.Task{ID: core.NewID(core.PrefixTask), OwnerID: o.ID, Mode: core.ModeTest, Kind: tasks.KindFax,
			ContextID: "ctx", SubjectID: subject, CreatedAt: at(0)}
		must(t, s.CreateAgentTask(ctx, tk))
		return tk
	}
	paidTask, openTask := task(d.ID), task(unpaid.ID)
	cfg := func(tk *tasks.Task, id string, sec int) *tasks.PushConfig {
		c := &tasks.PushConfig{ID: core.NewID(core.PrefixPushConfig), OwnerID: o.ID, Mode: core.ModeTest, TaskID: tk.ID, ConfigID: id,
			URL: "https://push.example/" + id, Token: []byte{1, 2, 3}, AuthScheme: "Bearer", Credentials: []byte{4, 5}, CreatedAt: at(sec)}
		must(t, s.CreatePushConfig(ctx, c))
		return c
	}
	a, b := cfg(paidTask, "a", 1), cfg(paidTask, "b", 2)
	c := cfg(openTask, openTask.ID, 3)
	// What was last pushed is kept per config, and forgotten when its URL
	// (maybe another receiver) is replaced.
	must(t, s.SetPushConfigPushed(ctx, a.ID, "a1"))
	a.LastPushed = "a1"
	must(t, s.SetPushConfigPushed(ctx, c.ID, "c1"))
	wantErr(t, "SetPushConfigPushed of no config", s.SetPushConfigPushed(ctx, "pnc_missing", "x"), core.ErrNoRows)
	c.Token, c.Credentials, c.AuthScheme = nil, nil, ""
	c.URL = "https://push.example/changed"
	must(t, s.UpdatePushConfig(ctx, c))

	got, err := s.GetPushConfig(ctx, o.ID, paidTask.ID, "a")
	must(t, err)
	wantEqual(t, "GetPushConfig", got, a)
	got, err = s.GetPushConfigByID(ctx, c.ID)
	must(t, err)
	wantEqual(t, "GetPushConfigByID after update", got, c)
	_, err = s.GetPushConfig(ctx, other.ID, paidTask.ID, "a")
	wantErr(t, "GetPushConfig of another owner", err, core.ErrNoRows)
	list, err := s.ListPushConfigs(ctx, o.ID, paidTask.ID)
	must(t, err)
	wantEqual(t, "ListPushConfigs", list, []tasks.PushConfig{*a, *b})
	list, err = s.ListPushConfigs(ctx, other.ID, paidTask.ID)
	must(t, err)
	wantEqual(t, "ListPushConfigs of another owner", len(list), 0)
	dup := *a
	dup.ID = core.NewID(core.PrefixPushConfig)
	wantErr(t, "a taken config id", s.CreatePushConfig(ctx, &dup), core.ErrExists)
	n, err := s.CountPushConfigs(ctx, o.ID, core.ModeTest)
	must(t, err)
	wantEqual(t, "CountPushConfigs", n, 3)
	n, err = s.CountPushConfigs(ctx, o.ID, core.ModeLive)
	must(t, err)
	wantEqual(t, "CountPushConfigs live", n, 0)

	// The draft's own subject, then the fax it was paid with.
	ids, err := s.PushConfigTargets(ctx, o.ID, core.ModeTest, unpaid.ID)
	must(t, err)
	wantEqual(t, "targets of a draft", ids, []string{c.ID})
	f := faxOf(doc, at(2))
	f.PaymentMethod, f.DraftID = faxes.PayCheckout, &d.ID
	must(t, s.CreateFax(ctx, f))
	must(t, s.MarkDraftPaid(ctx, d.ID, f.ID))
	ids, err = s.PushConfigTargets(ctx, o.ID, core.ModeTest, f.ID)
	must(t, err)
	want := []string{a.ID, b.ID}
	if b.ID < a.ID {
		want = []string{b.ID, a.ID}
	}
	wantEqual(t, "targets of a paid fax", ids, want)
	for _, q := range []struct {
		owner string
		mode  core.Mode
	}{{other.ID, core.ModeTest}, {o.ID, core.ModeLive}} {
		ids, err = s.PushConfigTargets(ctx, q.owner, q.mode, f.ID)
		must(t, err)
		wantEqual(t, "targets of another owner or mode", len(ids), 0)
	}

	wantErr(t, "delete of another owner", s.DeletePushConfig(ctx, other.ID, paidTask.ID, "a"), core.ErrNoRows)
	must(t, s.DeletePushConfig(ctx, o.ID, paidTask.ID, "a"))
	wantErr(t, "delete twice", s.DeletePushConfig(ctx, o.ID, paidTask.ID, "a"), core.ErrNoRows)
	must(t, s.DeletePushConfigByID(ctx, b.ID))
	wantErr(t, "delete by id twice", s.DeletePushConfigByID(ctx, b.ID), core.ErrNoRows)

	purged, err := s.PurgePushConfigs(ctx, at(3))
	must(t, err)
	wantEqual(t, "purged before the last", purged, int64(0))
	purged, err = s.PurgePushConfigs(ctx, at(4))
	must(t, err)
	wantEqual(t, "purged", purged, int64(1))
}
