// Package seal encrypts small secrets at rest (a signing key, a payment
// credential) with AES-256-GCM under a key derived from a shared server
// secret for one purpose, so a database reader sees no secret and every
// replica can open what another sealed. The additional data binds a sealed
// value to its row: it cannot be moved to another one.
package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// aead derives the purpose's key from secret (HMAC-SHA256, so one secret
// can serve several purposes without their keys meeting).
func aead(secret []byte, purpose string) (cipher.AEAD, error) {
	if len(secret) < 32 {
		return nil, fmt.Errorf("seal: the secret has %d bytes, need 32", len(secret))
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(purpose))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Seal encrypts plain for purpose, bound to aad: nonce ‖ ciphertext.
func Seal(secret []byte, purpose string, aad, plain []byte) ([]byte, error) {
	a, err := aead(secret, purpose)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return a.Seal(nonce, nonce, plain, aad), nil
}

// Open decrypts what Seal sealed with the same secret, purpose and aad.
func Open(secret []byte, purpose string, aad, sealed []byte) ([]byte, error) {
	a, err := aead(secret, purpose)
	if err != nil {
		return nil, err
	}
	if len(sealed) < a.NonceSize() {
		return nil, errors.New("seal: the sealed value is too short")
	}
	return a.Open(nil, sealed[:a.NonceSize()], sealed[a.NonceSize():], aad)
}
