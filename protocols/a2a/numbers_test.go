package a2a_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/faxhub/faxhub/core"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/internal/require"
	"github.com/faxhub/faxhub/internal/testenv"
)

// ownerPrincipal is the owner's test-mode principal (an API key), for what
// the owner does outside A2A: paying at the checkout, a fax arriving.
func ownerPrincipal(t *testing.T, e *env, ownerID string) core.Principal {
	t.Helper()
	key, _, err := e.a.Svc.Accounts.CreateAPIKey(t.Context(), ownerID, core.ModeTest, "owner")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.a.Svc.Accounts.AuthenticateAPIKey(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// payNumber pays the first month of a number as its owner (the checkout
// the console's number page starts, completed as the test checkout does)
// and runs the order the queue would (the env's queue is insert-only).
func payNumber(t *testing.T, e *env, p core.Principal, numberID string) {
	t.Helper()
	co, err := e.a.Svc.Checkout.StartNumber(t.Context(), p, numberID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.Svc.Checkout.Complete(t.Context(), co.ID); err != nil {
		t.Fatal(err)
	}
}

// The buy_number task: INPUT_REQUIRED with the number and its checkoutUrl,
// WORKING once paid, COMPLETED with the number artifact once provisioned;
// cancel before payment gives the reservation back; another owner cannot
// see it.
func TestNumberTask(t *testing.T) {
	e := newEnv(t)
	w := e.owner("numtask@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	p := ownerPrincipal(t, e, w.Account.ID)

	found := call(t, c, skillMsg("search_numbers", map[string]any{"areaCode": "312", "limit": 2}))
	nums, _ := found["numbers"].([]any)
	if len(nums) != 2 {
		t.Fatalf("search_numbers = %v", found)
	}
	first := nums[0].(map[string]any)
	number, _ := first["number"].(string)
	if !strings.HasPrefix(number, "+1312") || first["monthlyPrice"] == "" || first["country"] != "US" {
		t.Fatalf("search_numbers = %v", found)
	}

	req := skillMsg("buy_number", map[string]any{"number": number})
	req.Message.ContextID = "numbers-1"
	res, err := c.SendMessage(t.Context(), req)
	task := asTask(t, res, err)
	_, data := statusData(t, task)
	checkout, _ := data["checkoutUrl"].(string)
	numberID, _ := data["id"].(string)
	if task.Status.State != a2a.TaskStateInputRequired || task.ContextID != "numbers-1" || task.Metadata["skill"] != "buy_number" ||
		data["status"] != "awaiting_payment" || data["number"] != number || data["reservedUntil"] == nil ||
		checkout != e.base+"/console/numbers/"+numberID+"?mode=test" || len(task.Artifacts) != 0 {
		t.Fatalf("buy_number task %+v %v", task, data)
	}
	if got := getTask(t, c, task.ID); got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("GetTask %+v", got.Status)
	}
	if cr := call(t, c, skillMsg("get_credits", nil)); cr["balance"] != "0.00" {
		t.Fatalf("buying spent credits: %v", cr)
	}

	// Another owner: not found, as an unknown task.
	other := e.client(e.owner("numtask-other@example.com").Token(t, allScopes, e.base+"/a2a"))
	_, err = other.GetTask(t.Context(), &a2a.GetTaskRequest{ID: task.ID})
	a2aErr(t, "another owner's number task", err, a2a.ErrTaskNotFound, "not found")
	_, err = other.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	a2aErr(t, "cancel another owner's number task", err, a2a.ErrTaskNotFound, "not found")

	// The owner pays: WORKING while provisioning, COMPLETED when active.
	payNumber(t, e, p, numberID)
	paid := getTask(t, c, task.ID)
	if _, data := statusData(t, paid); paid.Status.State != a2a.TaskStateWorking || data["status"] != "pending" || data["checkoutUrl"] != nil {
		t.Fatalf("paid number task %+v %v", paid.Status, data)
	}
	if err := e.a.Svc.Numbers.PlaceOrder(t.Context(), numberID); err != nil { // the order_number job
		t.Fatal(err)
	}
	done := getTask(t, c, task.ID)
	art := artifactData(done, "number")
	text, _ := statusData(t, done)
	if done.Status.State != a2a.TaskStateCompleted || art == nil || art["id"] != numberID || art["status"] != "active" || art["paidThrough"] == nil ||
		!strings.Contains(text, number) {
		t.Fatalf("completed number task %+v %v %q", done.Status, art, text)
	}
	_, err = c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	a2aErr(t, "cancel an active number", err, a2a.ErrTaskNotCancelable, "task_not_cancelable")
	ln := call(t, c, skillMsg("list_numbers", nil))
	if l, _ := ln["numbers"].([]any); len(l) != 1 || l[0].(map[string]any)["status"] != "active" {
		t.Fatalf("list_numbers = %v", ln)
	}

	// Cancel before payment: the reservation is given back, so the number
	// can be bought again.
	second := nums[1].(map[string]any)["number"].(string)
	res, err = c.SendMessage(t.Context(), skillMsg("buy_number", map[string]any{"number": second}))
	t2 := asTask(t, res, err)
	canceled, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: t2.ID})
	if err != nil || canceled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancel number task: %+v %v", canceled, err)
	}
	if _, data := statusData(t, canceled); data["failureCode"] != "canceled" {
		t.Fatalf("canceled number task data %v", data)
	}
	if got := getTask(t, c, t2.ID); got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("canceled number task reads %s", got.Status.State)
	}
	res, err = other.SendMessage(t.Context(), skillMsg("buy_number", map[string]any{"number": second}))
	if again := asTask(t, res, err); again.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("the canceled reservation still holds %s: %+v", second, again.Status)
	}

	// Refusals create no task.
	n := countTasks(t, e)
	_, err = c.SendMessage(t.Context(), skillMsg("buy_number", map[string]any{"number": number}))
	a2aErr(t, "buy a held number", err, a2a.ErrInvalidParams, "number_unavailable")
	_, err = c.SendMessage(t.Context(), skillMsg("buy_number", map[string]any{"number": "12"}))
	a2aErr(t, "buy a bad number", err, a2a.ErrInvalidParams, "destination")
	_, err = c.SendMessage(t.Context(), skillMsg("buy_number", map[string]any{}))
	a2aErr(t, "buy without number", err, a2a.ErrInvalidParams, "number")
	_, err = c.SendMessage(t.Context(), skillMsg("search_numbers", map[string]any{"country": "USA"}))
	a2aErr(t, "search a bad country", err, a2a.ErrInvalidParams, "invalid_request")
	if countTasks(t, e) != n {
		t.Fatal("a refused buy_number created a task")
	}

	// 0.3 clients get the same task.
	auth := "Bearer " + w.Token(t, allScopes, e.base+"/a2a")
	_, _, body := e.rpc(auth, nil, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"id":"`+string(task.ID)+`"}}`)
	r, _ := body["result"].(map[string]any)
	if r["kind"] != "task" || r["status"].(map[string]any)["state"] != "completed" || r["artifacts"] == nil {
		t.Fatalf("0.3 tasks/get %v", body)
	}
}

// The inbox skills read a received fax as text, with a download link and
// never the document; another owner's fax is not found.
func TestInboxSkills(t *testing.T) {
	if _, err := exec.LookPath("pdftotext"); err != nil {
		require.Missing(t, "pdftotext", "apt-get install poppler-utils")
	}
	e := newEnv(t)
	w := e.owner("inbox@example.com")
	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	p := ownerPrincipal(t, e, w.Account.ID)

	res, err := c.SendMessage(t.Context(), skillMsg("buy_number", map[string]any{"number": "+12025550110"}))
	_, data := statusData(t, asTask(t, res, err))
	numberID := data["id"].(string)
	payNumber(t, e, p, numberID)
	if err := e.a.Svc.Numbers.PlaceOrder(t.Context(), numberID); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "in.pdf")
	if err := os.WriteFile(path, testenv.MinimalPDF(1), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := e.a.Svc.Inbox.Simulate(t.Context(), p, inbox.TestInboundFax{To: "+12025550110", From: "+13125550100", Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.a.Svc.Inbox.Process(t.Context(), in.ID, false); err != nil { // the process_inbound job
		t.Fatal(err)
	}

	li := call(t, c, skillMsg("list_inbox", map[string]any{"numberId": numberID, "limit": 10}))
	faxes, _ := li["faxes"].([]any)
	if len(faxes) != 1 || li["hasMore"] != false {
		t.Fatalf("list_inbox = %v", li)
	}
	if f := faxes[0].(map[string]any); f["id"] != in.ID || f["status"] != "received" || f["from"] != "+13125550100" || f["to"] != "+12025550110" || f["text"] != nil ||
		!strings.Contains(f["textPreview"].(string), "faxhub test page 1") {
		t.Fatalf("list_inbox fax = %v", f)
	}
	_, err = c.SendMessage(t.Context(), skillMsg("list_inbox", map[string]any{"limit": 1000}))
	a2aErr(t, "list_inbox limit", err, a2a.ErrInvalidParams, "invalid_request")

	f := call(t, c, skillMsg("read_inbox_fax", map[string]any{"id": in.ID}))
	link, _ := f["downloadUrl"].(string)
	if f["id"] != in.ID || f["pages"] != float64(1) || f["textStatus"] == nil || !strings.HasPrefix(link, e.api+core.LinkInboxFile.PathPrefix()) || f["downloadExpiresAt"] == nil {
		t.Fatalf("read_inbox_fax = %v", f)
	}
	if text, _ := f["text"].(string); f["textStatus"] != string(inbox.TextExtracted) || !strings.Contains(text, "faxhub test page 1") {
		t.Fatalf("read_inbox_fax text: %v", f)
	}
	for _, k := range []string{"document", "bytes", "contentBase64", "documentKey"} {
		if _, ok := f[k]; ok {
			t.Fatalf("read_inbox_fax carries %s: %v", k, f)
		}
	}

	other := e.client(e.owner("inbox-other@example.com").Token(t, allScopes, e.base+"/a2a"))
	_, err = other.SendMessage(t.Context(), skillMsg("read_inbox_fax", map[string]any{"id": in.ID}))
	a2aErr(t, "another owner's fax", err, a2a.ErrInvalidParams, "not_found")
	if li := call(t, other, skillMsg("list_inbox", nil)); len(li["faxes"].([]any)) != 0 {
		t.Fatalf("another owner's inbox = %v", li)
	}
}

// Each number and inbox skill needs its scope from core's table; GetTask
// and CancelTask of a number task need fax:read and fax:draft.
func TestNumberAndInboxScopes(t *testing.T) {
	e := newEnv(t)
	w := e.owner("numscope@example.com")
	for _, sc := range []struct {
		skill, scope string
		args         map[string]any
	}{
		{"search_numbers", "fax:read", nil},
		{"list_numbers", "fax:read", nil},
		{"buy_number", "fax:draft", map[string]any{"number": "+14155550120"}},
		{"list_inbox", "inbox:read", nil},
		{"read_inbox_fax", "inbox:read", map[string]any{"id": "inb_x"}},
	} {
		var others []string
		for _, s := range allScopes {
			if s != sc.scope {
				others = append(others, s)
			}
		}
		c := e.client(w.Token(t, others, e.base+"/a2a"))
		_, err := c.SendMessage(t.Context(), skillMsg(sc.skill, sc.args))
		d := a2aErr(t, sc.skill, err, a2a.ErrUnauthorized, sc.scope)
		if d["code"] != core.CodeInsufficientScope || d["required_scope"] != sc.scope {
			t.Errorf("%s: details %v", sc.skill, d)
		}
	}

	c := e.client(w.Token(t, allScopes, e.base+"/a2a"))
	res, err := c.SendMessage(t.Context(), skillMsg("buy_number", map[string]any{"number": "+14155550120"}))
	task := asTask(t, res, err)
	readOnly := e.client(w.Token(t, []string{"fax:read"}, e.base+"/a2a"))
	if got := getTask(t, readOnly, task.ID); got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("GetTask with fax:read %+v", got.Status)
	}
	_, err = readOnly.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: task.ID})
	a2aErr(t, "cancel a number task without fax:draft", err, a2a.ErrUnauthorized, "fax:draft")
}
