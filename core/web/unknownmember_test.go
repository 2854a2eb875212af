package web

import "testing"

func TestUnknownMember(t *testing.T) {
	type inner struct {
		Subject string `json:"subject"`
	}
	type args struct {
		To    string            `json:"to"`
		Cover *inner            `json:"coverPage"`
		List  []inner           `json:"list"`
		Free  map[string]string `json:"free"`
		Raw   any               `json:"raw"`
	}
	for _, c := range []struct{ body, want string }{
		{`{"to":"x","coverPage":{"subject":"s"}}`, ""},
		{`{"to":"x","coverPage":{"subject":"s","fax":"1"}}`, "coverPage.fax"},
		{`{"zz":1,"aa":2}`, "aa"},
		{`{"list":[{"subject":"a"},{"nope":1}]}`, "list[].nope"},
		{`{"free":{"any":"thing"},"raw":{"x":{"y":1}}}`, ""},
		{`{"coverPage":null}`, ""},
		{`not json`, ""},
	} {
		if got := UnknownMember([]byte(c.body), &args{}); got != c.want {
			t.Errorf("%s: %q, want %q", c.body, got, c.want)
		}
	}
}
