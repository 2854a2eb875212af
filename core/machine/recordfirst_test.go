package machine_test

import (
	"fmt"
	"testing"

	"github.com/faxhub/faxhub/core/documents"
	"github.com/faxhub/faxhub/core/machine"
	"github.com/faxhub/faxhub/internal/testenv"
	"github.com/faxhub/faxhub/rest/mpp"
)

// TestMachineRecordFirstPrecedence: a request without a credential is
// recorded before its request_id's row is read, and still answers what
// reading first answers: a taken request_id is 409 for another body, and
// its challenges (or stored 200) for the same one, ahead of anything wrong
// with the body's document or destination; with no row, that is the
// answer.
func TestMachineRecordFirstPrecedence(t *testing.T) {
	m := newMachineEnv(t)
	first := m.fax(t, machineBody(deliverable, "req-taken", 1))
	wantRefusal(t, first, machine.PaymentRequired)

	for name, r := range map[string]machine.FaxRequest{
		"broken document":       brokenPDF(machineBody(deliverable, "req-taken", 1)),
		"invalid destination":   machineBody("+1", "req-taken", 1),
		"another page count":    machineBody(deliverable, "req-taken", 2),
		"unreadable credential": unreadable(brokenPDF(machineBody(deliverable, "req-taken", 1))),
	} {
		_, err := m.svc.Machine.Fax(ctx, r)
		if err == nil {
			t.Fatalf("%s: answered", name)
		}
		testenv.WantCode(t, err, machine.CodeRequestIDConflict)
	}

	again := m.fax(t, machineBody(deliverable, "req-taken", 1))
	wantRefusal(t, again, machine.PaymentRequired)
	if fmt.Sprint(again.Challenges) != fmt.Sprint(first.Challenges) {
		t.Fatalf("the same body again: %+v, first %+v", again.Challenges, first.Challenges)
	}

	paid := m.paid(t, machineBody(deliverable, "req-paid", 1))
	replay := m.fax(t, machineBody(deliverable, "req-paid", 1))
	if replay.Order == nil || replay.Order.ID != paid.Order.ID {
		t.Fatalf("a paid request_id's body again: %+v, paid %+v", replay, paid.Order)
	}

	_, err := m.svc.Machine.Fax(ctx, brokenPDF(machineBody(deliverable, "req-fresh", 1)))
	testenv.WantCode(t, err, documents.CodeCorruptDocument)
	if n := m.count(t, "SELECT COUNT(*) FROM machine_requests WHERE request_id = ?", "req-fresh"); n != 0 {
		t.Fatalf("a refused request recorded %d rows", n)
	}
}

// brokenPDF cuts r's document short; its digest stands for the body that
// carried it.
func brokenPDF(r machine.FaxRequest) machine.FaxRequest {
	r.PDF = r.PDF[:len(r.PDF)/2]
	r.BodyDigest = mpp.ContentDigest(append([]byte(r.BodyDigest), "broken"...))
	return r
}

func unreadable(r machine.FaxRequest) machine.FaxRequest {
	r.Unreadable = &machine.Refusal{Kind: machine.MalformedCredential, Detail: "credential is not base64url"}
	return r
}
