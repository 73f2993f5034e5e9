package main

import (
	"context"
	"errors"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/urutau-io/fleet/internal/fence"
)

// tick bounds how long the loop sleeps between decisions. Go's timers run on CLOCK_MONOTONIC,
// which stops while the machine is suspended: a deadline that passed during a suspend is seen at
// the next tick after waking, not when the timer finally fires.
const tick = 250 * time.Millisecond

// exitNotFound is the shell's status for a command that cannot be run.
const exitNotFound = 127

// supervisor carries out internal/fence's decisions on one command.
type supervisor struct {
	o      fence.CommandLine
	leases *leaseReader
	now    clock
	log    *log.Logger

	st    fence.State
	child int // the command's pid (and process group) while it runs; 0 when none
	// status is the exit status of the command's last run, what the fence exits with.
	status int
	// lastLog is the last decision logged, so a steady state is logged once.
	lastLog string
}

func newSupervisor(o fence.CommandLine, leases *leaseReader, now clock, stderr io.Writer) *supervisor {
	return &supervisor{o: o, leases: leases, now: now, log: log.New(stderr, "fence: ", log.LstdFlags|log.Lmicroseconds|log.LUTC)}
}

// run is the loop: decide, act, wait for a poll, a signal or the next deadline. It returns the
// fence's exit status.
func (s *supervisor) run() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	polls := make(chan fence.Poll)
	go s.pollLoop(ctx, polls)
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT,
		syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	s.log.Printf("lease %s/%s, ttl %v, grace %v, poll %v: waiting for a renewal", s.o.Namespace, s.o.Name, s.o.Config.TTL, s.o.Config.Grace, s.o.Poll)
	timer := time.NewTimer(0)
	for {
		var d fence.Decision
		s.st, d = fence.Step(s.o.Config, s.st, s.now())
		if code, done := s.act(d); done {
			return code
		}
		wait := tick
		if d.HasWake {
			wait = min(wait, max(0, d.Wake-s.now()))
		}
		timer.Reset(wait)
		select {
		case p := <-polls:
			s.st = s.st.Observe(p)
		case sig := <-sigs:
			if code, done := s.signal(sig); done {
				return code
			}
		case <-timer.C:
		}
	}
}

// act carries out d; done says the fence exits with code.
func (s *supervisor) act(d fence.Decision) (code int, done bool) {
	s.logDecision(d)
	switch d.Action {
	case fence.Start:
		if err := s.start(); err != nil {
			s.log.Printf("cannot start %q: %v", s.o.Command[0], err)
			return exitNotFound, true
		}
	case fence.Stop:
		s.signalGroup(syscall.SIGTERM)
	case fence.Kill:
		s.signalGroup(syscall.SIGKILL)
	case fence.Exit:
		return s.status, true
	}
	return 0, false
}

func (s *supervisor) logDecision(d fence.Decision) {
	if d.Action == fence.Run {
		return
	}
	line := d.Action.String() + ": " + d.Reason
	if line != s.lastLog {
		s.log.Print(line)
		s.lastLog = line
	}
}

func (s *supervisor) start() error {
	cmd := exec.Command(s.o.Command[0], s.o.Command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Its own process group, so a stop reaches whatever it started too; and killed if the fence
	// dies without being PID 1 (as PID 1 its death ends the container anyway).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	s.child = cmd.Process.Pid
	// The loop reaps with wait4 (it reaps orphans too, as PID 1): the handle is not needed.
	_ = cmd.Process.Release()
	s.log.Printf("started %q, pid %d", s.o.Command[0], s.child)
	return nil
}

// signalGroup sends sig to the command's process group.
func (s *supervisor) signalGroup(sig syscall.Signal) {
	if s.child == 0 {
		return
	}
	if err := syscall.Kill(-s.child, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		s.log.Printf("sending %v to process group %d: %v", sig, s.child, err)
	}
}

// signal handles a signal the fence received; done says the fence exits with code.
func (s *supervisor) signal(sig os.Signal) (code int, done bool) {
	switch sig {
	case syscall.SIGCHLD:
		return s.reap()
	case syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT:
		// The container is being stopped: pass it on, and start nothing more.
		if !s.st.ShuttingDown {
			s.log.Printf("received %v: stopping", sig)
		}
		s.st.ShuttingDown = true
	}
	s.signalGroup(sig.(syscall.Signal))
	return 0, false
}

// reap collects every exited child. When the command exited by itself while it was running,
// the fence exits with its status; when the fence stopped it, the fence waits for a renewal.
func (s *supervisor) reap() (code int, done bool) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return 0, false
		}
		if pid != s.child {
			continue // an orphan the fence adopted as PID 1
		}
		s.status = exitStatus(ws)
		// Whatever it left behind in its group goes with it.
		s.signalGroup(syscall.SIGKILL)
		s.child = 0
		byItself := s.st.Phase == fence.Running && !s.st.ShuttingDown
		s.log.Printf("%q exited: %v", s.o.Command[0], describe(ws))
		s.st = s.st.Exited()
		if byItself {
			return s.status, true
		}
	}
}

func exitStatus(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

func describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return "status " + strconv.Itoa(ws.ExitStatus())
}

// pollLoop reads the Lease one request at a time and hands each answer to the loop. A read that
// fails is only logged (when the failure changes): the loop's deadline does the rest.
func (s *supervisor) pollLoop(ctx context.Context, polls chan<- fence.Poll) {
	var lastErr string
	for ctx.Err() == nil {
		sent := s.now()
		rctx, cancel := context.WithTimeout(ctx, s.o.RequestTimeout)
		tok, err := s.leases.token(rctx)
		cancel()
		switch {
		case err != nil:
			if err.Error() != lastErr {
				s.log.Printf("reading the Lease: %v", err)
				lastErr = err.Error()
			}
		default:
			if lastErr != "" {
				s.log.Print("reading the Lease again")
				lastErr = ""
			}
			select {
			case polls <- fence.Poll{SentAt: sent, Token: tok}:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-time.After(s.o.Poll):
		case <-ctx.Done():
			return
		}
	}
}
