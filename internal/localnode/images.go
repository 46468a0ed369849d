package localnode

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
)

// fileDigest is a file's SHA-256, hex-encoded.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
