package testenv

import (
	"context"
	"sync"
)

// WarningRecorder keeps the admission warnings an API server sends back (HTTP Warning headers,
// code 299). Set it as a rest.Config's WarningHandlerWithContext.
type WarningRecorder struct {
	mu   sync.Mutex
	seen []string
}

// HandleWarningHeaderWithContext records one warning.
func (w *WarningRecorder) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen = append(w.seen, text)
}

// Take returns the warnings seen since the last Take.
func (w *WarningRecorder) Take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.seen
	w.seen = nil
	return out
}
