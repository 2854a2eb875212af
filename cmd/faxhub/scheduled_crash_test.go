package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/faxhub/faxhub/internal/testenv"
)

// TestScheduledCrashRecovery: faxes scheduled a few seconds ahead survive
// a kill -9 of the only server: restarted, it sends each one once, not
// before its sendAt, and charges each once. (Real processes, so real time:
// the test polls with a deadline, it asserts no durations.)
func TestScheduledCrashRecovery(t *testing.T) {
	if os.Getenv(EnvCrashTest) == "" {
		t.Skipf("set %s=1 to run the crash test (make check does)", EnvCrashTest)
	}
	r := newCrashRig(t)
	key := r.owner("scheduled@example.com", "scheduled crash test")
	srv := r.start()
	doc := upload(t, r.client, r.call, key, testenv.MinimalPDF(1))

	sendAt := time.Now().Add(5 * time.Second).Truncate(time.Second)
	ids := make([]string, 3)
	for i := range ids {
		body, _ := json.Marshal(map[string]any{"to": "+12125550100", "documentId": doc, "sendAt": sendAt.Format(time.RFC3339),
			"header": "Crash Test", "coverPage": map[string]any{"subject": "scheduled"}})
		code, f, err := r.call(http.MethodPost, "/api/v1/faxes", key, body, map[string]string{"Idempotency-Key": fmt.Sprint("sched-", i)})
		if err != nil || code != 200 || f["status"] != "scheduled" {
			t.Fatalf("schedule: %d %v %v", code, f, err)
		}
		ids[i] = f["id"].(string)
	}
	_, before, err := r.call(http.MethodGet, "/api/v1/credits", key, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.kill(srv)
	r.start()

	deadline := sendAt.Add(2 * time.Minute)
	for _, id := range ids {
		for {
			code, f, err := r.call(http.MethodGet, "/api/v1/faxes/"+id, key, nil, nil)
			if err == nil && code == 200 && f["status"] == "delivered" {
				a := f["latestAttempt"].(map[string]any)
				started, _ := time.Parse(time.RFC3339Nano, a["startedAt"].(string))
				if f["attemptCount"].(float64) != 1 || started.Before(sendAt) || f["faxedPages"].(float64) != 2 {
					t.Fatalf("fax %s: %v", id, f)
				}
				break
			}
			if err == nil && code == 200 && f["status"] != "scheduled" && f["status"] != "sending" {
				t.Fatalf("fax %s: %v", id, f)
			}
			if time.Now().After(deadline) {
				t.Fatalf("fax %s not delivered two minutes after its time: %v", id, f)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	_, after, err := r.call(http.MethodGet, "/api/v1/credits", key, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Held when scheduled, captured when delivered: the balance did not
	// move again, and nothing is held any more.
	if after["balance"] != before["balance"] || after["held"] != "0.00" {
		t.Fatalf("credits before %v, after %v", before, after)
	}
}
