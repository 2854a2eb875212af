package seal_test

import (
	"bytes"
	"testing"

	"github.com/faxhub/faxhub/core/seal"
)

func TestSealOpen(t *testing.T) {
	secret := bytes.Repeat([]byte{7}, 32)
	sealed, err := seal.Seal(secret, "purpose a", []byte("row 1"), []byte("card token"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("card token")) {
		t.Fatal("the plain text shows in the sealed value")
	}
	if got, err := seal.Open(secret, "purpose a", []byte("row 1"), sealed); err != nil || string(got) != "card token" {
		t.Fatalf("Open = %q, %v", got, err)
	}
	for name, open := range map[string]func() ([]byte, error){
		"another row":     func() ([]byte, error) { return seal.Open(secret, "purpose a", []byte("row 2"), sealed) },
		"another purpose": func() ([]byte, error) { return seal.Open(secret, "purpose b", []byte("row 1"), sealed) },
		"another secret": func() ([]byte, error) {
			return seal.Open(bytes.Repeat([]byte{8}, 32), "purpose a", []byte("row 1"), sealed)
		},
		"truncated":    func() ([]byte, error) { return seal.Open(secret, "purpose a", []byte("row 1"), sealed[:5]) },
		"short secret": func() ([]byte, error) { return seal.Open(secret[:16], "purpose a", []byte("row 1"), sealed) },
	} {
		if _, err := open(); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
}
