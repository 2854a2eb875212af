// Package passkeytest is the software passkey authenticator the Go tests
// use to drive faxhub's real WebAuthn endpoints (descope/virtualwebauthn).
package passkeytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"

	"github.com/descope/virtualwebauthn"
)

// Device is an authenticator holding one passkey.
type Device struct {
	Auth virtualwebauthn.Authenticator
	Cred virtualwebauthn.Credential
}

// NewDevice returns a device with a fresh P-256 passkey.
func NewDevice() *Device {
	return &Device{Auth: virtualwebauthn.NewAuthenticator(), Cred: NewCredential()}
}

// NewCredential makes a P-256 passkey whose coordinates have no leading
// zero byte: virtualwebauthn encodes them with big.Int.Bytes (unpadded),
// which go-webauthn rightly refuses, so one key in 128 would fail a test.
func NewCredential() virtualwebauthn.Credential {
	for {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		pub, err := key.PublicKey.Bytes()
		if err != nil {
			panic(err)
		}
		if pub[1] == 0 || pub[33] == 0 {
			continue
		}
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			panic(err)
		}
		return virtualwebauthn.NewCredentialWithImportedKey(virtualwebauthn.KeyTypeEC2, der)
	}
}
