package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// install copies the running fence binary to dest: `fence install /urutau-fence/fence` is the
// init container of a fenced coordinator pod. The hub's image is distroless (no shell, no cp), so
// the fence copies itself. The copy is written next to dest and renamed, so a coordinator
// container never sees half a binary.
func install(dest string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the fence binary: %w", err)
	}
	src, err := os.Open(self)
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }()
	tmp, err := os.CreateTemp(filepath.Dir(dest), ".fence-*")
	if err != nil {
		return fmt.Errorf("installing to %s: %w", dest, err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := io.Copy(tmp, src); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("copying to %s: %w", tmp.Name(), err)
	}
	// Readable and runnable by any user: the coordinator image runs as its own.
	if err := tmp.Chmod(0o555); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dest)
}
