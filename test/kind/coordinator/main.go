// Command urutau-coordinator is the e2e suite's stand-in for urutau's coordinator, whose image
// cannot be pulled where the suite runs. It behaves like the coordinator at the pod level, which
// is all the hub sees of it:
//   - `urutau-coordinator run --file F --metrics-addr A ...` (the command the hub renders; other
//     flags are accepted and ignored);
//   - reads the pipeline file the hub's ConfigMap mounts and exits 1 if it is missing or is not a
//     pipeline (as the real one does), so a pod that starts proves the mount;
//   - serves /healthz, /readyz and /metrics on A: /readyz answers 200 once the file is read and
//     503 from SIGTERM on, so readiness is real;
//   - on SIGTERM drains for STANDIN_DRAIN (a Go duration, default 5s) and exits 0, so termination
//     grace is real; with STANDIN_IGNORE_SIGTERM=true it goes on serving until the kubelet kills
//     it at the end of the pod's grace period.
//
// The image (hack/kind-e2e.sh) sets those variables per tag.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		log.Printf("urutau-coordinator (stand-in): %v", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	f, err := parseArgs(args)
	if err != nil {
		return err
	}
	b, err := parseBehaviour(os.Getenv)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(f.file)
	if err != nil {
		return fmt.Errorf("reading the pipeline: %w", err)
	}
	p, err := readPipeline(data)
	if err != nil {
		return fmt.Errorf("%s: %w", f.file, err)
	}
	log.Printf("pipeline %s (source %s): serving %s; drain %s, ignore SIGTERM %v", p.name, p.source, f.metricsAddr, b.drain, b.ignoreSIGTERM)

	var s state
	s.ready.Store(true)
	ln, err := net.Listen("tcp", f.metricsAddr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 5 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	for {
		select {
		case err := <-serveErr:
			return err
		case sig := <-sigs:
			if b.ignoreSIGTERM {
				log.Printf("%v: ignored (STANDIN_IGNORE_SIGTERM): still serving until killed", sig)
				continue
			}
			s.ready.Store(false)
			log.Printf("%v: not ready; draining for %s", sig, b.drain)
			time.Sleep(b.drain)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			log.Printf("drained: exiting")
			return nil
		}
	}
}

// state is what the probes report.
type state struct {
	ready atomic.Bool
}

func (s *state) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !s.ready.Load() {
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		ready := 0
		if s.ready.Load() {
			ready = 1
		}
		// The gauge KEDA's trigger reads, and readiness, in the Prometheus text format.
		_, _ = fmt.Fprintf(w, "# TYPE urutau_coordinator_pending_batches gauge\nurutau_coordinator_pending_batches 0\n# TYPE urutau_standin_ready gauge\nurutau_standin_ready %d\n", ready)
	})
	return mux
}
