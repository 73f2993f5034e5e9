package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// cpuSlice is the length of each CPU profile taken during a run: pprof's CPU profile has a
// length fixed when it starts, so a run of unknown length is covered by slices, merged after.
const cpuSlice = 5 * time.Second

// profiler takes CPU profiles of a process back to back from start until finish, and (for the
// hub) a heap profile at finish.
type profiler struct {
	fetch       fetchFunc
	dir, prefix string
	// bin is the program profiled, for pprof.
	bin     string
	stopped chan struct{}
	done    chan error
	slices  []string
}

// fetchFunc saves the answer of a pprof endpoint (query: "profile?seconds=5", "heap?gc=1") into
// path.
type fetchFunc func(ctx context.Context, query, path string) error

// profileFiles are the profiles of one process in one run: the CPU profile (merged from its
// slices) and the heap profile at convergence ("" when none was taken).
type profileFiles struct {
	size      string
	bin       string
	cpuSlices []string
	cpu, heap string
}

// hubPprof fetches from the hub's pprof endpoint at addr.
func hubPprof(addr string) fetchFunc {
	return func(ctx context.Context, query, path string) error {
		return fetchProfile(ctx, "http://"+addr+"/debug/pprof/"+query, path)
	}
}

// apiServerPprof fetches from an API server's /debug/pprof (kube-apiserver serves it to admins).
func apiServerPprof(cfg *rest.Config) (fetchFunc, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.GroupVersion, cfg.NegotiatedSerializer = &schema.GroupVersion{}, scheme.Codecs.WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, query, path string) error {
		name, params, _ := strings.Cut(query, "?")
		req := rc.Get().AbsPath("/debug/pprof/" + name)
		if k, v, ok := strings.Cut(params, "="); ok {
			req = req.Param(k, v)
		}
		b, err := req.DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("profiling %s: %w", cfg.Host, err)
		}
		return os.WriteFile(path, b, 0o644)
	}, nil
}

// startProfiler starts taking CPU profile slices with fetch into dir, named after prefix; bin is
// the program profiled.
func startProfiler(ctx context.Context, fetch fetchFunc, bin, dir, prefix string) (*profiler, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := &profiler{fetch: fetch, bin: bin, dir: dir, prefix: prefix, stopped: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		for i := 0; ; i++ {
			select {
			case <-p.stopped:
				p.done <- nil
				return
			default:
			}
			path := filepath.Join(dir, fmt.Sprintf("%s-cpu-slice-%03d.pprof", prefix, i))
			if err := p.fetch(ctx, fmt.Sprintf("profile?seconds=%d", int(cpuSlice.Seconds())), path); err != nil {
				p.done <- err
				return
			}
			p.slices = append(p.slices, path)
		}
	}()
	return p, nil
}

// heap takes a heap profile now (after a collection, so it shows what is live).
func (p *profiler) heap(ctx context.Context) error {
	return p.fetch(ctx, "heap?gc=1", p.heapPath())
}

func (p *profiler) heapPath() string { return filepath.Join(p.dir, p.prefix+"-heap.pprof") }

// finish waits for the CPU slice in progress: the CPU profile ends up to cpuSlice after finish
// is called. withHeap: heap took a heap profile.
func (p *profiler) finish(withHeap bool) (profileFiles, error) {
	close(p.stopped)
	if err := <-p.done; err != nil {
		return profileFiles{}, err
	}
	f := profileFiles{size: p.prefix, bin: p.bin, cpuSlices: p.slices, cpu: filepath.Join(p.dir, p.prefix+"-cpu.pprof")}
	if withHeap {
		f.heap = p.heapPath()
	}
	return f, nil
}

// fetchProfile saves what url answers into path.
func fetchProfile(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("profiling the hub: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profiling the hub: %s: %s", url, resp.Status)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, resp.Body); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// reportProfile merges the CPU slices of f into f.cpu, then prints the top entries of the CPU
// and heap (in use) profiles and keeps them next to the profiles as <profile>.top.txt. It runs
// after every measurement: go tool pprof takes seconds of CPU.
func reportProfile(ctx context.Context, f profileFiles) error {
	args := append([]string{"tool", "pprof", "-proto", "-output", f.cpu, f.bin}, f.cpuSlices...)
	if out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("merging the CPU profile slices: %w: %s", err, out)
	}
	for _, s := range f.cpuSlices {
		_ = os.Remove(s)
	}
	var errs []error
	for _, p := range []struct{ path, index string }{{f.cpu, "cpu"}, {f.heap, "inuse_space"}} {
		if p.path == "" {
			continue
		}
		out, err := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=10", "-sample_index="+p.index, f.bin, p.path).CombinedOutput()
		if err != nil {
			errs = append(errs, fmt.Errorf("go tool pprof -top %s: %w: %s", p.path, err, out))
			continue
		}
		fmt.Printf("\n%s: go tool pprof -top -nodecount=10 -sample_index=%s %s %s\n%s", f.size, p.index, f.bin, p.path, strings.TrimRight(string(out), "\n")+"\n")
		errs = append(errs, os.WriteFile(p.path+".top.txt", out, 0o644))
	}
	return errors.Join(errs...)
}
