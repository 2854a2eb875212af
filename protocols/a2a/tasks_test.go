package a2a_test

import (
	"bytes"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/faxhub/faxhub/internal/consoletest"
	"github.com/faxhub/faxhub/internal/testenv"
)

// upload runs create_upload and PUTs a pages-long PDF to its uploadUrl
// without any Authorization header.
func upload(t *testing.T, c *a2aclient.Client, pages int) string {
	t.Helper()
	up := call(t, c, skillMsg("create_upload", nil))
	req, _ := http.NewRequest(http.MethodPut, up["uploadUrl"].(string), bytes.NewReader(testenv.MinimalPDF(pages)))
	req.Header.Set("Content-Type", "application/pdf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT upload: %d", resp.StatusCode)
	}
	return up["uploadToken"].(string)
}

// artifactData returns the data of a task's artifact named name (nil when
// it has none).
func artifactData(task *a2a.Task, name string) map[string]any {
	for _, a := range task.Artifacts {
		if a.Name == name && len(a.Parts) == 1 {
			d, _ := a.Parts[0].Data().(map[string]any)
			return d
		}
	}
	return nil
}

// statusData returns the text and data of a task's status message.
func statusData(t *testing.T, task *a2a.Task) (string, map[string]any) {
	t.Helper()
	m := task.Status.Message
	if m == nil || m.Role != a2a.MessageRoleAgent || m.TaskID != task.ID {
		t.Fatalf("status message %+v", m)
	}
	var text string
	var data map[string]any
	for _, p := range m.Parts {
		switch c := p.Content.(type) {
		case a2a.Text:
			text = string(c)
		case a2a.Data:
			data, _ = c.Value.(map[string]any)
		}
	}
	return text, data
}

func getTask(t *testing.T, c *a2aclient.Client, id a2a.TaskID) *a2a.Task {
	t.Helper()
	task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: id})
	if err != nil {
		t.Fatalf("GetTask %s: %v", id, err)
	}
	return task
}

// pay pays a draft at its checkout page as the owner (the console's draft
// page, then the test card on the test checkout).
func pay(t *testing.T, w *consoletest.Owner, checkoutURL string) {
	t.Helper()
	page := w.Do(t, http.MethodGet, checkoutURL, nil, "", nil)
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page.Body)
	action := regexp.MustCompile(`action="(/console/drafts/[^"]+/pay[^"]*)"`).FindStringSubmatch(page.Body)
	if page.Status != 200 || csrf == nil || action == nil {
		t.Fatalf("draft page: %d %s", page.Status, page.Body)
	}
	r := w.Form(t, strings.ReplaceAll(action[1], "&amp;", "&"), url.Values{"csrf": {csrf[1]}})
	loc := r.Header.Get("Location")
	if r.Status != http.StatusSeeOther || !strings.Contains(loc, "/checkout/test/") {
		t.Fatalf("pay: %d %q %s", r.Status, loc, r.Body)
	}
	r = w.Form(t, loc, url.Values{"card_number": {"4242 4242 4242 4242"}, "expiry": {"12/40"}, "cvc": {"123"}})
	if r.Status != http.StatusSeeOther {
		t.Fatalf("test card: %d %s", r.Status, r.Body)
	}
}

// The whole fax task: INPUT_REQUIRED with the draft and its checkout, the
// owner pays, WORKING while queued, COMPLETED with the fax when delivered;
// another owner cannot see it; cancel before and after payment.
func TestFaxTask(t *testing.T) {
	e := newEnv(t)
	w := e.owner("task@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	tok := upload(t, c, 2)

	req := skillMsg("create_fax", map[string]any{"to": "+12125550100", "uploadToken": tok})
	req.Message.ContextID = "conversation-1"
	res, err := c.SendMessage(t.Context(), req)
	task := asTask(t, res, err)
	if task.Status.State != a2a.TaskStateInputRequired || task.ContextID != "conversation-1" || !strings.HasPrefix(string(task.ID), "tsk_") || task.Status.Timestamp == nil {
		t.Fatalf("task %+v", task)
	}
	draft := artifactData(task, "fax-draft")
	checkout, _ := draft["checkoutUrl"].(string)
	if draft == nil || !strings.HasPrefix(checkout, e.base+"/console/drafts/") || draft["quote"].(map[string]any)["pages"] != float64(2) || draft["draftId"] == "" {
		t.Fatalf("fax-draft artifact %v", draft)
	}
	text, data := statusData(t, task)
	if !strings.Contains(text, checkout) || data["checkoutUrl"] != checkout {
		t.Fatalf("status message %q %v", text, data)
	}
	if got := getTask(t, c, task.ID); got.Status.State != a2a.TaskStateInputRequired || artifactData(got, "fax-draft")["checkoutUrl"] != checkout {
		t.Fatalf("GetTask %+v", got)
	}

	// Another owner's token: TaskNotFound, word for word as an unknown id.
	other := e.client(e.owner("other@example.com").Token(t, allScopes, e.base+"/a2a"))
	_, errOther := other.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	_, errUnknown := other.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "tsk_unknown"})
	a2aErr(t, "another owner's task", errOther, a2a.ErrTaskNotFound, "not found")
	if errOther.Error() != errUnknown.Error() {
		t.Fatalf("another owner's task %q, an unknown one %q", errOther, errUnknown)
	}
	_, err = other.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	a2aErr(t, "cancel another owner's task", err, a2a.ErrTaskNotFound, "not found")

	// GetTask needs fax:read.
	noRead := e.client(w.Token(t, []string{"fax:draft"}, e.base+"/a2a"))
	_, err = noRead.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	a2aErr(t, "GetTask without fax:read", err, a2a.ErrUnauthorized, "fax:read")

	// The owner pays at the checkout page: the task works, then completes.
	pay(t, w, checkout)
	paid := getTask(t, c, task.ID)
	_, data = statusData(t, paid)
	faxID, _ := data["faxId"].(string)
	if paid.Status.State != a2a.TaskStateWorking || data["status"] != "queued" || faxID == "" {
		t.Fatalf("paid task %+v %v", paid.Status, data)
	}
	if err := e.a.Svc.Faxes.Deliver(t.Context(), faxID); err != nil {
		t.Fatal(err)
	}
	done := getTask(t, c, task.ID)
	fax := artifactData(done, "fax")
	text, _ = statusData(t, done)
	if done.Status.State != a2a.TaskStateCompleted || fax == nil || fax["faxId"] != faxID || fax["status"] != "delivered" ||
		fax["latestAttempt"] == nil || !strings.Contains(text, "delivered") {
		t.Fatalf("completed task %+v %v %q", done.Status, fax, text)
	}
	if !done.Status.Timestamp.After(*task.Status.Timestamp) && !done.Status.Timestamp.Equal(*task.Status.Timestamp) {
		t.Fatalf("timestamps %v then %v", task.Status.Timestamp, done.Status.Timestamp)
	}
	_, err = c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	a2aErr(t, "cancel a delivered fax", err, a2a.ErrTaskNotCancelable, "task_not_cancelable")

	// Cancel an unpaid draft.
	res, err = c.SendMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": "+12125550100", "uploadToken": tok, "cover": true, "coverText": "Hello"}))
	t2 := asTask(t, res, err)
	if t2.ContextID == "" || t2.ContextID == task.ContextID {
		t.Fatalf("a task without contextId gets its own: %q", t2.ContextID)
	}
	canceled, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: t2.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel draft: %+v %v", canceled, err)
	}
	if got := getTask(t, c, t2.ID); got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("canceled draft reads %s", got.Status.State)
	}

	// Cancel a paid, queued fax: its price returns as credits.
	res, err = c.SendMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": "+12125550100", "uploadToken": tok}))
	t3 := asTask(t, res, err)
	pay(t, w, artifactData(t3, "fax-draft")["checkoutUrl"].(string))
	before := call(t, c, skillMsg("get_credits", nil))["balance"]
	canceled, err = c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: t3.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel queued fax: %+v %v", canceled, err)
	}
	if after := call(t, c, skillMsg("get_credits", nil))["balance"]; after == before {
		t.Fatalf("the canceled fax's price did not return: %v → %v", before, after)
	}

	// 0.3: tasks/get and tasks/cancel with 0.3 names and shapes.
	auth := "Bearer " + w.Token(t, allScopes, e.base+"/a2a")
	_, _, body := e.rpc(auth, nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"`+string(task.ID)+`"}}`)
	r, _ := body["result"].(map[string]any)
	if r["kind"] != "task" || r["status"].(map[string]any)["state"] != "completed" || r["artifacts"] == nil {
		t.Fatalf("0.3 tasks/get %v", body)
	}
	_, _, body = e.rpc(auth, nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":"`+string(task.ID)+`"}}`)
	if code, _, _ := rpcError(t, body); code != -32002 {
		t.Fatalf("0.3 tasks/cancel %v", body)
	}
	_, _, body = e.rpc(auth, nil, `{"jsonrpc":"2.0","id":3,"method":"message/send","params":{"message":{"kind":"message","messageId":"m","role":"user","parts":[{"kind":"data","data":{"skill":"create_fax","arguments":{"to":"+12125550100","uploadToken":"`+tok+`"}}}]}}}`)
	r, _ = body["result"].(map[string]any)
	if r["kind"] != "task" || r["status"].(map[string]any)["state"] != "input-required" {
		t.Fatalf("0.3 create_fax %v", body)
	}

	// Errors of create_fax create no task.
	n := countTasks(t, e)
	_, err = c.SendMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": "12", "uploadToken": tok}))
	a2aErr(t, "create_fax bad number", err, a2a.ErrInvalidParams, "destination")
	_, err = c.SendMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": "+12125550100", "uploadToken": "nope"}))
	a2aErr(t, "create_fax bad upload token", err, a2a.ErrInvalidParams, "upload")
	if countTasks(t, e) != n {
		t.Fatal("a refused create_fax created a task")
	}
}

// Delivery outcomes as task states: a partial delivery completes and says
// how many pages went; a failed fax fails with its failure code.
func TestFaxTaskOutcomes(t *testing.T) {
	e := newEnv(t)
	w := e.owner("outcomes@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	tok := upload(t, c, 2)
	for _, o := range []struct {
		to, code string
		state    a2a.TaskState
		text     string
	}{
		{"+12125550104", "", a2a.TaskStateCompleted, "1 of 2 pages"},
		{"+12125550103", "not_a_fax_machine", a2a.TaskStateFailed, "failed"},
	} {
		res, err := c.SendMessage(t.Context(), skillMsg("create_fax", map[string]any{"to": o.to, "uploadToken": tok}))
		task := asTask(t, res, err)
		pay(t, w, artifactData(task, "fax-draft")["checkoutUrl"].(string))
		_, data := statusData(t, getTask(t, c, task.ID))
		if err := e.a.Svc.Faxes.Deliver(t.Context(), data["faxId"].(string)); err != nil {
			t.Fatal(err)
		}
		got := getTask(t, c, task.ID)
		text, data := statusData(t, got)
		if got.Status.State != o.state || !strings.Contains(text, o.text) {
			t.Errorf("%s: %s %q", o.to, got.Status.State, text)
		}
		switch o.state {
		case a2a.TaskStateCompleted:
			fax := artifactData(got, "fax")
			if fax == nil || fax["status"] != "partial" || fax["pagesSent"] != float64(1) {
				t.Errorf("%s: fax artifact %v", o.to, fax)
			}
		case a2a.TaskStateFailed:
			if data["failureCode"] != o.code || artifactData(got, "fax") != nil {
				t.Errorf("%s: data %v, artifacts %+v", o.to, data, got.Artifacts)
			}
		}
	}
}
