package documents

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/faxhub/faxhub/core"
)

// UploadClaims is what an upload capability token binds: who may upload,
// in which mode, what type, how much and until when.
type UploadClaims struct {
	UploadID    string    `json:"u"`
	OwnerID     string    `json:"o"`
	Mode        core.Mode `json:"m"`
	ContentType string    `json:"ct,omitempty"`
	MaxBytes    int64     `json:"mb"`
	ExpiresAt   int64     `json:"exp"` // unix seconds
}

const uploadTokenVersion = "u1"

// signUploadToken encodes claims as "u1.<payload>.<mac>" (base64url), safe
// in a URL path.
func signUploadToken(secret []byte, c UploadClaims) string {
	payload, _ := json.Marshal(c)
	p := base64.RawURLEncoding.EncodeToString(payload)
	return uploadTokenVersion + "." + p + "." + uploadMAC(secret, p)
}

func uploadMAC(secret []byte, payload string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(uploadTokenVersion + "." + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verifyUploadToken checks the MAC (constant time) and decodes the claims;
// expiry is checked by the caller, because a completed upload's token still
// names its document after the PUT window closed.
func verifyUploadToken(secret []byte, token string) (UploadClaims, error) {
	bad := core.Errorf(core.KindForbidden, CodeUploadInvalid, "the upload token is not valid")
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] != uploadTokenVersion || len(token) > 1024 {
		return UploadClaims{}, bad
	}
	if !hmac.Equal([]byte(parts[2]), []byte(uploadMAC(secret, parts[1]))) {
		return UploadClaims{}, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return UploadClaims{}, bad
	}
	var c UploadClaims
	if err := json.Unmarshal(raw, &c); err != nil || c.UploadID == "" || c.OwnerID == "" {
		return UploadClaims{}, bad
	}
	return c, nil
}

func (c UploadClaims) expired(now time.Time) bool { return now.Unix() >= c.ExpiresAt }
