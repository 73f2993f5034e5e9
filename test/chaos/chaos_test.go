package chaos

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

var (
	flagSeed   = flag.Uint64("chaos.seed", 0, "run only the history generated from this seed")
	flagSeeds  = flag.Int("chaos.seeds", 0, "run this many random seeds (0: the short fixed set of `make test`)")
	flagBase   = flag.Uint64("chaos.base", 0, "first seed of -chaos.seeds (0: drawn from the clock and printed)")
	flagReplay = flag.String("chaos.replay", "", "replay the history saved in this JSON file")
	flagOps    = flag.Int("chaos.ops", 0, "operations per generated history (0: 10 for the short set, 18 otherwise)")
	flagCases  = flag.Bool("chaos.cases", false, "also run the named cases (case-1 ... case-16d)")
	flagOut    = flag.String("chaos.out", "", "directory for failing histories and reports (default $TMPDIR/urutau-chaos)")
	flagKeep   = flag.Bool("chaos.keep", false, "leave the local fleet running after the tests")
	flagCheck  = flag.String("chaos.recheck", "", "check again a recording saved with a failing history (no fleet needed)")
)

// shortSeeds are the histories `make test` runs: fixed, so a failure there is a regression.
var shortSeeds = []uint64{16, 30}

// The fleet is started once, by the first test that needs it, and stopped by TestMain.
var (
	fleetOnce sync.Once
	theFleet  atomic.Pointer[Fleet]
	fleetErr  error
	fleetWork string
)

func TestMain(m *testing.M) {
	// The suite's clients log nothing worth reading; the hubs log to their own files.
	ctrllog.SetLogger(logr.Discard())
	// Interrupted (Ctrl-C, a CI timeout's SIGTERM): stop the fleet rather than leave four
	// clusters and two hubs running.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "%s: stopping the chaos fleet\n", s)
		stopFleet()
		os.Exit(1)
	}()
	code := m.Run()
	if f := theFleet.Load(); f != nil && *flagKeep {
		fmt.Fprintf(os.Stderr, "-chaos.keep: the chaos fleet stays up in %s (hub logs %v)\n", fleetWork, f.HubLogs())
	} else {
		stopFleet()
	}
	os.Exit(code)
}

var stopOnce sync.Once

func stopFleet() {
	stopOnce.Do(func() {
		f := theFleet.Load()
		if f == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := f.Stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the chaos fleet:", err)
		}
		_ = os.RemoveAll(fleetWork)
	})
}

func sharedFleet(t *testing.T) *Fleet {
	t.Helper()
	bin := os.Getenv("KUBEBUILDER_ASSETS")
	if bin == "" {
		// Fail loudly: a silently skipped suite is a suite that does not run in CI.
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test-chaos`, or export KUBEBUILDER_ASSETS=$(hack/control-plane.sh print-dir)")
	}
	fleetOnce.Do(func() {
		root, err := filepath.Abs("../..")
		if err != nil {
			fleetErr = err
			return
		}
		if fleetWork, fleetErr = os.MkdirTemp("", "urutau-chaos-fleet-"); fleetErr != nil {
			return
		}
		start := time.Now()
		var f *Fleet
		f, fleetErr = StartFleet(context.Background(), FleetConfig{BinDir: bin, RepoRoot: root, WorkDir: fleetWork,
			Logf: func(format string, args ...any) { fmt.Printf("fleet: "+format+"\n", args...) }})
		theFleet.Store(f)
		fmt.Printf("chaos fleet up in %s\n", time.Since(start).Round(100*time.Millisecond))
	})
	if fleetErr != nil {
		t.Fatalf("starting the chaos fleet: %v", fleetErr)
	}
	return theFleet.Load()
}

// TestChaos plays histories on a local fleet and checks every invariant over each recording:
// the short fixed seeds by default, or what the -chaos.* flags select.
func TestChaos(t *testing.T) {
	if *flagCheck != "" {
		recheck(t, *flagCheck)
		return
	}
	if testing.Short() {
		t.Skip("starts a local fleet of real control planes (run without -short)")
	}
	hs, err := selected()
	if err != nil {
		t.Fatal(err)
	}
	f := sharedFleet(t)
	var tally Tally
	start := time.Now()
	for i, h := range hs {
		t.Run(h.Name, func(t *testing.T) {
			runOne(t, f, h, i, &tally)
		})
	}
	tally.Took = time.Since(start)
	t.Logf("chaos run: %d histories in %s\n%s", tally.Histories, tally.Took.Round(time.Second), tally.Table())
	if dir := outDir(); len(hs) > 2 {
		_ = os.MkdirAll(dir, 0o755)
		_ = os.WriteFile(filepath.Join(dir, "last-run.md"), []byte(tally.Table()), 0o644)
	}
}

// selected are the histories the flags ask for.
func selected() ([]History, error) {
	if *flagReplay != "" {
		h, err := LoadHistory(*flagReplay)
		return []History{h}, err
	}
	var hs []History
	if *flagCases {
		hs = append(hs, Cases()...)
	}
	ops := *flagOps
	switch {
	case *flagSeed != 0:
		hs = append(hs, Generate(*flagSeed, opsOr(ops, 18)))
	case *flagSeeds > 0:
		base := *flagBase
		if base == 0 {
			base = rand.Uint64N(1 << 40)
		}
		fmt.Printf("chaos: %d seeds from %d (-chaos.base=%d replays them)\n", *flagSeeds, base, base)
		for i := range *flagSeeds {
			hs = append(hs, Generate(base+uint64(i), opsOr(ops, 18)))
		}
	case !*flagCases:
		for _, s := range shortSeeds {
			hs = append(hs, Generate(s, opsOr(ops, 10)))
		}
	}
	return hs, nil
}

func opsOr(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

func outDir() string {
	if *flagOut != "" {
		return *flagOut
	}
	return tempDir()
}

// recheck judges a saved recording again, with the checker as it is now.
func recheck(t *testing.T, path string) {
	rec, err := LoadRecording(path)
	if err != nil {
		t.Fatal(err)
	}
	res := Check(rec)
	if res.Failed() {
		t.Errorf("%s", Report(rec, res))
		return
	}
	t.Log(Report(rec, res))
}

func runOne(t *testing.T, f *Fleet, h History, i int, tally *Tally) {
	t.Logf("seed %d:\n%s", h.Seed, h)
	start := time.Now()
	logsFrom := logSizes(f.HubLogs())
	rec, err := f.Run(t.Context(), h, i)
	if err != nil {
		t.Fatalf("running %s: %v", h.Name, err)
	}
	res := Check(rec)
	tally.Add(rec, res)
	report := Report(rec, res)
	t.Logf("%s ran in %s", h.Name, time.Since(start).Round(time.Millisecond))
	if h.Seed == 0 {
		// A named case that did not reach the window it tests proves nothing.
		for _, o := range missedAwaits(rec) {
			t.Errorf("%s: #%02d %s: %s (hub logs: %s)", h.Name, o.Index, o.Op, o.Err, strings.Join(f.HubLogs(), ", "))
		}
	}
	if !res.Failed() {
		t.Log(report)
		return
	}
	path, err := Save(outDir(), rec, res)
	if err != nil {
		t.Errorf("saving the history: %v", err)
	} else if err := saveHubLines(strings.TrimSuffix(path, ".json")+".hub.log", f.HubLogs(), logsFrom); err != nil {
		t.Errorf("saving the hub log lines of the history: %v", err)
	}
	t.Errorf("%s\n%s\nreplay: go test ./test/chaos -run 'TestChaos$' -chaos.replay=%s -v\n(history and report saved next to it; hub logs: %s)",
		report, h, path, strings.Join(f.HubLogs(), ", "))
}

// missedAwaits are the required awaits and the kill-hub-when of a recording whose condition was
// not met.
func missedAwaits(rec *Recording) []OpRecord {
	var out []OpRecord
	for _, o := range rec.Ops {
		switch op := o.Op.(type) {
		case Await:
			if op.Required && o.Err != "" {
				out = append(out, o)
			}
		case KillHubWhen:
			if o.Err != "" {
				out = append(out, o)
			}
		}
	}
	return out
}

// logSizes are the sizes of the hub logs now: where the lines of the history about to run begin.
func logSizes(logs []string) map[string]int64 {
	out := map[string]int64{}
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil {
			out[l] = fi.Size()
		}
	}
	return out
}

// saveHubLines copies to path what each hub log gained since from (logSizes before the history
// ran): the logs are shared by every history of the fleet and outlive it only with -chaos.keep,
// and a failure that does not replay is understood from them or not at all.
func saveHubLines(path string, logs []string, from map[string]int64) error {
	var out bytes.Buffer
	for _, l := range logs {
		raw, err := os.ReadFile(l)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(&out, "==> %s, from byte %d <==\n", filepath.Base(l), from[l])
		out.Write(raw[min(from[l], int64(len(raw))):])
	}
	return os.WriteFile(path, out.Bytes(), 0o644)
}
