package documents

import (
	"context"
	"fmt"

	"github.com/faxhub/faxhub/core"
)

// uploadRateKey names the shared limiter of an owner's upload capabilities
// in one mode.
func uploadRateKey(ownerID string, mode core.Mode) string {
	return "upload:" + ownerID + ":" + string(mode)
}

// allowUpload charges one upload capability to the owner's upload rate:
// Storage.UploadBurst/UploadInterval in live mode, the stricter
// TestUploadBurst/TestUploadInterval in test mode. Refused: 429
// rate_limited with Retry-After.
func (s *Service) allowUpload(ctx context.Context, p core.Principal) error {
	c := s.st
	interval, burst := c.UploadInterval, c.UploadBurst
	if p.Mode == core.ModeTest {
		interval, burst = c.TestUploadInterval, c.TestUploadBurst
	}
	return s.kernel.AllowIn(ctx, s.d.Store, uploadRateKey(p.OwnerID, p.Mode), interval, burst)
}

// checkQuota refuses adding bytes to the owner's unsent documents in mode
// when that would pass Storage.QuotaBytes: 413 storage_quota_exceeded.
// Concurrent PUTs check independently, so they can overshoot by the files
// in flight (each at most MaxUploadBytes).
func (s *Service) checkQuota(ctx context.Context, ownerID string, mode core.Mode, bytes int64) error {
	quota := s.st.QuotaBytes
	if quota < 0 {
		return nil
	}
	used, err := s.d.Store.DocumentUsage(ctx, ownerID, mode)
	if err != nil {
		return fmt.Errorf("check storage quota: %w", err)
	}
	if used+bytes > quota {
		return core.Errorf(core.KindTooLarge, CodeStorageQuota,
			"your unsent documents use %d of %d bytes; this file needs %d more. Send them, or wait: unsent documents are deleted %d days after upload",
			used, quota, bytes, int(s.st.UnsentRetention.Hours()/24)).
			With("used", used).With("limit", quota)
	}
	return nil
}
