package telnyx_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/faxhub/faxhub/core/faxes"
	"github.com/faxhub/faxhub/core/inbox"
	"github.com/faxhub/faxhub/core/numbers"
	"github.com/faxhub/faxhub/core/provider/telnyx"
)

const apiKey = "KEY0123456789secret"

// fakeAPI records requests and answers with the handler given per route.
type fakeAPI struct {
	t      *testing.T
	mu     sync.Mutex
	reqs   []recorded
	routes map[string]func(w http.ResponseWriter, r *http.Request, body map[string]any)
}

type recorded struct {
	Method, Path, Query, Auth string
	Body                      map[string]any
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			f.t.Errorf("%s %s: body is not JSON: %s", r.Method, r.URL.Path, raw)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			f.t.Errorf("%s %s: Content-Type %q", r.Method, r.URL.Path, ct)
		}
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), body})
	f.mu.Unlock()
	h, ok := f.routes[r.Method+" "+r.URL.Path]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"errors":[{"code":"10005","title":"Resource not found"}]}`)
		return
	}
	h(w, r, body)
}

func (f *fakeAPI) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func newProvider(t *testing.T, routes map[string]func(http.ResponseWriter, *http.Request, map[string]any)) (*telnyx.Provider, *fakeAPI, *bytes.Buffer) {
	t.Helper()
	api := &fakeAPI{t: t, routes: routes}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	var logs bytes.Buffer
	p, err := telnyx.New(telnyx.Config{
		APIKey: apiKey, ConnectionID: "conn_1", DefaultFrom: "+12125550199", APIURL: srv.URL,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, api, &logs
}

func answer(status int, body string) func(http.ResponseWriter, *http.Request, map[string]any) {
	return func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

const mediaURL = "https://faxhub.example/media/fax_1?token=SECRETTOKEN"

func sendRequest() faxes.ProviderRequest {
	return faxes.ProviderRequest{FaxID: "fax_1", AttemptID: "att_1", Attempt: 1, To: "+12125550100", Pages: 2, MediaURL: mediaURL}
}

func TestNewRequiresKeyAndConnection(t *testing.T) {
	for _, c := range []telnyx.Config{{ConnectionID: "c"}, {APIKey: "k"}, {APIKey: "k", ConnectionID: "c", APIURL: "ftp://x"}} {
		if _, err := telnyx.New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
}

func TestSendRequestShape(t *testing.T) {
	p, api, logs := newProvider(t, map[string]func(http.ResponseWriter, *http.Request, map[string]any){
		"POST /v2/faxes": answer(202, `{"data":{"id":"tx_fax_9","status":"queued","record_type":"fax"}}`),
	})
	res, err := p.Send(context.Background(), sendRequest())
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != faxes.AttemptSending || res.ProviderRef != "tx_fax_9" {
		t.Fatalf("result %+v", res)
	}
	r := api.requests()[0]
	if r.Auth != "Bearer "+apiKey {
		t.Errorf("Authorization %q", r.Auth)
	}
	want := map[string]any{
		"connection_id": "conn_1", "to": "+12125550100", "from": "+12125550199", "media_url": mediaURL,
		"client_state": telnyx.ClientState("fax_1", "att_1"), "quality": "high",
	}
	for k, v := range want {
		if r.Body[k] != v {
			t.Errorf("%s = %v, want %v", k, r.Body[k], v)
		}
	}
	// The owner's number wins over the default.
	req := sendRequest()
	req.From = "+12125550142"
	if _, err := p.Send(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := api.requests()[1].Body["from"]; got != "+12125550142" {
		t.Errorf("from = %v", got)
	}
	// A fax's resolution and header line: Telnyx's quality and caller name.
	for i, c := range []struct {
		res           faxes.Resolution
		header        string
		quality, name any
	}{
		{faxes.ResolutionStandard, "ACME Legal, Inc. — Zürich", "normal", "ACME Legal Inc.  Zrich"},
		{faxes.ResolutionFine, "", "high", nil},
	} {
		req := sendRequest()
		req.Resolution, req.Header = c.res, c.header
		if _, err := p.Send(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if b := api.requests()[2+i].Body; b["quality"] != c.quality || b["from_display_name"] != c.name {
			t.Errorf("%s %q: quality %v, from_display_name %v", c.res, c.header, b["quality"], b["from_display_name"])
		}
	}
	if strings.Contains(logs.String(), apiKey) || strings.Contains(logs.String(), "SECRETTOKEN") {
		t.Errorf("the log carries a secret: %s", logs)
	}
}

func TestSendErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		wantErr   bool
		wantCode  string
		wantFinal bool
	}{
		{"bad number", 422, `{"errors":[{"code":"10016","title":"Invalid phone number","source":{"pointer":"/to"}}]}`, false, faxes.FailureInvalidNumber, true},
		{"bad number by title", 400, `{"errors":[{"code":"40001","title":"Destination number is not valid"}]}`, false, faxes.FailureInvalidNumber, true},
		{"bad media", 422, `{"errors":[{"code":"10015","title":"Invalid value","source":{"pointer":"/media_url"}}]}`, false, faxes.FailureMedia, true},
		{"bad caller id is ours to fix, retried", 422, `{"errors":[{"code":"10016","title":"Invalid from number","source":{"pointer":"/from"}}]}`, true, "", false},
		{"unauthorized is ours to fix, retried", 401, `{"errors":[{"code":"10009","title":"Authentication failed"}]}`, true, "", false},
		{"rate limited", 429, `{}`, true, "", false},
		{"server error", 503, `upstream down`, true, "", false},
		{"accepted without id", 202, `{"data":{}}`, true, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _, _ := newProvider(t, map[string]func(http.ResponseWriter, *http.Request, map[string]any){
				"POST /v2/faxes": answer(tc.status, tc.body),
			})
			res, err := p.Send(context.Background(), sendRequest())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v (result %+v)", err, tc.wantErr, res)
			}
			if err != nil {
				if strings.Contains(err.Error(), apiKey) || strings.Contains(err.Error(), "SECRETTOKEN") {
					t.Errorf("the error carries a secret: %v", err)
				}
				return
			}
			if res.Status != faxes.AttemptFailed || res.FailureCode != tc.wantCode || res.Retryable {
				t.Errorf("result %+v, want final %s", res, tc.wantCode)
			}
		})
	}
}

func TestSendNetworkErrorAndNoMedia(t *testing.T) {
	p, err := telnyx.New(telnyx.Config{APIKey: apiKey, ConnectionID: "c", DefaultFrom: "+12125550199", APIURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Send(context.Background(), sendRequest()); err == nil || strings.Contains(err.Error(), "SECRETTOKEN") || strings.Contains(err.Error(), "caller id") {
		t.Errorf("network error: %v", err)
	}
	req := sendRequest()
	req.MediaURL = ""
	if _, err := p.Send(context.Background(), req); err == nil {
		t.Error("a send without a media URL was accepted")
	}
	// Neither the owner's number nor a default caller id.
	noFrom, _ := telnyx.New(telnyx.Config{APIKey: apiKey, ConnectionID: "c", APIURL: "http://127.0.0.1:1"})
	if _, err := noFrom.Send(context.Background(), sendRequest()); err == nil || !strings.Contains(err.Error(), "FAXHUB_TELNYX_FROM") {
		t.Errorf("a send without a caller id: %v", err)
	}
}

func TestSendBoundsTheAnswer(t *testing.T) {
	p, _, _ := newProvider(t, map[string]func(http.ResponseWriter, *http.Request, map[string]any){
		"POST /v2/faxes": func(w http.ResponseWriter, _ *http.Request, _ map[string]any) {
			w.WriteHeader(202)
			_, _ = w.Write(bytes.Repeat([]byte(" "), 2<<20))
		},
	})
	if _, err := p.Send(context.Background(), sendRequest()); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an oversized answer: %v", err)
	}
}

func TestCancelSend(t *testing.T) {
	p, api, _ := newProvider(t, map[string]func(http.ResponseWriter, *http.Request, map[string]any){
		"POST /v2/faxes/tx_fax_9/actions/cancel": answer(200, `{"result":"ok"}`),
	})
	if err := p.CancelSend(context.Background(), "tx_fax_9"); err != nil {
		t.Fatal(err)
	}
	if r := api.requests()[0]; r.Auth != "Bearer "+apiKey {
		t.Errorf("cancel request %+v", r)
	}
	if err := p.CancelSend(context.Background(), "tx_other"); err == nil {
		t.Error("a refused cancel was not an error")
	}
}

func TestSearchNumbers(t *testing.T) {
	p, api, _ := newProvider(t, map[string]func(http.ResponseWriter, *http.Request, map[string]any){
		"GET /v2/available_phone_numbers": answer(200, `{"data":[
			{"phone_number":"+12125550150","region_information":[{"region_type":"country_code","region_name":"US"},{"region_type":"state","region_name":"NY"},{"region_type":"rate_center","region_name":"NEW YORK"}]},
			{"phone_number":"+12125550151","region_information":[{"region_type":"location","region_name":"Brooklyn"}]},
			{"phone_number":"+12125550152"}]}`),
	})
	got, err := p.SearchNumbers(context.Background(), numbers.Search{Country: "us", AreaCode: "212", Locality: "New York", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []numbers.AvailableNumber{
		{E164: "+12125550150", Country: "US", Region: "NY", Locality: "New York"},
		{E164: "+12125550151", Country: "US", Locality: "Brooklyn"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	// One exact number (core checks a number before buying it).
	one, err := p.SearchNumbers(context.Background(), numbers.Search{Number: "+12125550151", Limit: 1})
	if err != nil || len(one) != 1 || one[0].E164 != "+12125550151" {
		t.Errorf("exact search: %+v %v", one, err)
	}
	if q := api.requests()[1].Query; !strings.Contains(q, "filter%5Bphone_number%5D%5Bcontains%5D=12125550151") {
		t.Errorf("exact query %s", q)
	}
	q := api.requests()[0].Query
	for _, s := range []string{"filter%5Bcountry_code%5D=US", "filter%5Bnational_destination_code%5D=212", "filter%5Blocality%5D=New+York", "filter%5Bfeatures%5D%5B%5D=fax", "filter%5Blimit%5D=2"} {
		if !strings.Contains(q, s) {
			t.Errorf("query %s lacks %s", q, s)
		}
	}
}

func TestOrderNumber(t *testing.T) {
	for _, tc := range []struct {
		name      string
		existing  string
		post      func(http.ResponseWriter, *http.Request, map[string]any)
		want      numbers.OrderResult
		wantPosts int
	}{
		{
			name:     "new order pending",
			existing: `{"data":[]}`,
			post:     answer(200, `{"data":{"id":"ord_9","status":"pending","customer_reference":"num_1","phone_numbers":[{"id":"pn_1","phone_number":"+12125550150","status":"pending"}]}}`),
			want:     numbers.OrderResult{Status: numbers.Pending, OrderRef: "ord_9"}, wantPosts: 1,
		},
		{
			name:     "new order done at once",
			existing: `{"data":[]}`,
			post:     answer(200, `{"data":{"id":"ord_9","status":"success","phone_numbers":[{"id":"pn_1","phone_number":"+12125550150","status":"success"}]}}`),
			want:     numbers.OrderResult{Status: numbers.Active, OrderRef: "ord_9", ProviderRef: "pn_1"}, wantPosts: 1,
		},
		{
			name:     "an order placed before a crash is reused",
			existing: `{"data":[{"id":"ord_8","status":"success","customer_reference":"num_1","phone_numbers":[{"id":"pn_0"}]}]}`,
			want:     numbers.OrderResult{Status: numbers.Active, OrderRef: "ord_8", ProviderRef: "pn_0"},
		},
		{
			name:     "number gone",
			existing: `{"data":[]}`,
			post:     answer(422, `{"errors":[{"code":"85001","title":"Number not available"}]}`),
			want:     numbers.OrderResult{Status: numbers.Failed}, wantPosts: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var posts int
			p, api, _ := newProvider(t, map[string]func(http.ResponseWriter, *http.Request, map[string]any){
				"GET /v2/number_orders": answer(200, tc.existing),
				"POST /v2/number_orders": func(w http.ResponseWriter, r *http.Request, b map[string]any) {
					posts++
					if b["customer_reference"] != "num_1" || b["connection_id"] != "conn_1" {
						t.Errorf("order body %v", b)
					}
					pn, _ := b["phone_numbers"].([]any)
					if len(pn) != 1 || pn[0].(map[string]any)["phone_number"] != "+12125550150" {
						t.Errorf("phone_numbers %v", b["phone_numbers"])
					}
					tc.post(w, r, b)
				},
			})
			got, err := p.OrderNumber(context.Background(), numbers.Order{NumberID: "num_1", E164: "+12125550150"})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.want.Status || got.OrderRef != tc.want.OrderRef || got.ProviderRef != tc.want.ProviderRef {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if got.Status == numbers.Failed && got.FailureReason == "" {
				t.Error("a failed order has no reason")
			}
			if posts != tc.wantPosts {
				t.Errorf("%d orders placed, want %d", posts, tc.wantPosts)
			}
			if q := api.requests()[0].Query; q != "filter%5Bcustomer_reference%5D=num_1" {
				t.Errorf("lookup query %s", q)
			}
		})
	}
}

func TestOrderNumberLookupFailsClosed(t *testing.T) {
	p, _, _ := newProvider(t, map[string]func(http.ResponseWriter, *http.Request, map[string]any){
		"GET /v2/number_orders":  answer(500, `{}`),
		"POST /v2/number_orders": func(http.ResponseWriter, *http.Request, map[string]any) { t.Error("ordered blind") },
	})
	if _, err := p.OrderNumber(context.Background(), numbers.Order{NumberID: "num_1", E164: "+12125550150"}); err == nil {
		t.Error("no error")
	}
}

// TestReleaseNumber: the number's own id is found by its E.164 form (never
// the id its order reported) and deleted; a number not on the account is
// released already; a failed DELETE is an error.
func TestReleaseNumber(t *testing.T) {
	ids := map[string]string{"+12125550150": "pn_1", "+12125550157": "pn_7", "+12125550155": "pn_5"}
	p, api, _ := newProvider(t, map[string]func(http.ResponseWriter, *http.Request, map[string]any){
		"GET /v2/phone_numbers": func(w http.ResponseWriter, r *http.Request, _ map[string]any) {
			e := r.URL.Query().Get("filter[phone_number]")
			if id, ok := ids[e]; ok {
				answer(200, `{"data":[{"id":"`+id+`","phone_number":"`+e+`"}]}`)(w, r, nil)
				return
			}
			answer(200, `{"data":[]}`)(w, r, nil)
		},
		"DELETE /v2/phone_numbers/pn_1": answer(200, `{"data":{"id":"pn_1"}}`),
		"DELETE /v2/phone_numbers/pn_7": answer(200, `{}`),
		"DELETE /v2/phone_numbers/pn_5": answer(500, `{}`),
	})
	ctx := context.Background()
	// The order's id (ord_line_1) is not what is deleted.
	if err := p.ReleaseNumber(ctx, &numbers.Number{E164: "+12125550150", ProviderRef: "ord_line_1"}); err != nil {
		t.Fatal(err)
	}
	if err := p.ReleaseNumber(ctx, &numbers.Number{E164: "+12125550151", ProviderRef: "pn_gone"}); err != nil {
		t.Errorf("releasing a number not on the account: %v", err)
	}
	if err := p.ReleaseNumber(ctx, &numbers.Number{E164: "+12125550157"}); err != nil {
		t.Fatal(err)
	}
	if err := p.ReleaseNumber(ctx, &numbers.Number{E164: "+12125550155", ProviderRef: "pn_5"}); err == nil {
		t.Error("a failed release was not an error")
	}
	var deleted []string
	for _, r := range api.requests() {
		if r.Method == http.MethodDelete {
			deleted = append(deleted, r.Path)
		}
	}
	if strings.Join(deleted, ",") != "/v2/phone_numbers/pn_1,/v2/phone_numbers/pn_7,/v2/phone_numbers/pn_5" {
		t.Errorf("deleted %v", deleted)
	}
}

func TestFetchInbound(t *testing.T) {
	var auth []string
	media := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, "%PDF-1.4 inbound")
	}))
	defer media.Close()
	p, _, _ := newProvider(t, nil)
	rc, err := p.FetchInbound(context.Background(), &inbox.InboundFax{ID: "inb_1", MediaURL: media.URL + "/doc.pdf?X-Amz-Signature=SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "%PDF-1.4 inbound" {
		t.Errorf("body %q", b)
	}
	if auth[0] != "" {
		t.Errorf("the API key went to a foreign host: %q", auth[0])
	}
	_, err = p.FetchInbound(context.Background(), &inbox.InboundFax{ID: "inb_1", MediaURL: media.URL + "/missing?X-Amz-Signature=SECRET"})
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("404: %v", err)
	}
	for _, u := range []string{"file:///etc/passwd", "", "http://"} {
		if _, err := p.FetchInbound(context.Background(), &inbox.InboundFax{ID: "inb_1", MediaURL: u}); err == nil {
			t.Errorf("%q fetched", u)
		}
	}
}
