package node

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
)

// ResetSeedFile in the data directory holds 32 random bytes (mode 0600) from
// which the node's QUIC stateless reset key is derived (quic.Config.ResetSeed).
// A restarted node must answer packets of its previous incarnation's
// connections with resets its peers recognise, so that they drop those
// connections at once instead of after an idle timeout; the key therefore
// has to survive restarts. It used to be derived from the TLS key, which a
// certificate rotation replaces.
const ResetSeedFile = "quic-reset-seed"

const resetSeedLen = 32

// loadResetSeed returns the data directory's reset seed, creating it on the
// first start. A seed of the wrong length (a torn write) is replaced. On an
// error the caller goes on without one (the endpoint then derives the key
// from its TLS key, as before this file existed).
func loadResetSeed(dataDir string, log *slog.Logger) ([]byte, error) {
	path := filepath.Join(dataDir, ResetSeedFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil && len(b) == resetSeedLen:
		return b, nil
	case err == nil:
		log.Warn("replacing a QUIC reset seed of the wrong length", "path", path, "bytes", len(b))
	case !os.IsNotExist(err):
		return nil, fmt.Errorf("node: %w", err)
	}
	seed := make([]byte, resetSeedLen)
	if _, err := rand.Read(seed); err != nil {
		return nil, fmt.Errorf("node: reset seed: %w", err)
	}
	if err := writeFileSyncedMode(path, seed, 0o600); err != nil {
		return nil, fmt.Errorf("node: recording reset seed: %w", err)
	}
	return seed, nil
}
