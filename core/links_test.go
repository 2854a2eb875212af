package core

import (
	"net/url"
	"testing"
)

func TestExpandLink(t *testing.T) {
	t.Parallel()
	cfg := Config{BaseURL: "http://faxhub.test", APIURL: "https://api.faxhub.test"}
	for _, tc := range []struct {
		link    Link
		pairs   []string
		want    string
		wantErr bool
	}{
		{LinkUpload, []string{"token", "abc"}, "https://api.faxhub.test/api/v1/uploads/abc", false},
		{LinkClaimPage, []string{"token", "a/b"}, "http://faxhub.test/agent/claim/a%2Fb", false},
		{LinkDevicePage, nil, "http://faxhub.test/console/device", false},
		{LinkApprovalPage, []string{"id", "apr_1"}, "http://faxhub.test/console/approvals/apr_1", false},
		{LinkApprovalPage, nil, "", true},                    // a variable without a value
		{LinkApprovalPage, []string{"token", "x"}, "", true}, // a variable the route has not
		{LinkApprovalPage, []string{"id"}, "", true},         // not pairs
		{Link("rest.nothing"), nil, "", true},                // no such link
	} {
		got, err := ExpandLink(cfg, tc.link, tc.pairs...)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ExpandLink(%s, %v) = %q, %v; want %q (error %v)", tc.link, tc.pairs, got, err, tc.want, tc.wantErr)
		}
	}
	k, err := NewKernel(Config{BaseURL: "http://faxhub.test"}, Deps{Store: nopStore{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := k.URL(LinkNumberPage, url.Values{"mode": {"test"}}, "id", "num_1"); got != "http://faxhub.test/console/numbers/num_1?mode=test" {
		t.Errorf("URL = %s", got)
	}
	if got := k.LinkPath(LinkApprovalPage, "id", "apr_1"); got != "/console/approvals/apr_1" {
		t.Errorf("LinkPath = %s", got)
	}
}

// nopStore is a Store that must not be used: building a URL reads nothing.
type nopStore struct{ Store }
