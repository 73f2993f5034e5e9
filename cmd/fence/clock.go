package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// clock reads the fence's monotonic clock, as time since an arbitrary origin.
type clock func() time.Duration

// boottime is CLOCK_BOOTTIME: monotonic (never stepped, unlike the wall clock), and unlike
// CLOCK_MONOTONIC, which Go's own timers use, it counts time the machine spent suspended. A node
// that sleeps and wakes up has its reader's deadline pass in its sleep; measured on
// CLOCK_MONOTONIC, the reader would run on after waking for as long as the node slept.
func boottime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		// Linux has had CLOCK_BOOTTIME since 2.6.39; nothing else can stand in for it.
		panic("fence: reading CLOCK_BOOTTIME: " + err.Error())
	}
	return time.Duration(ts.Nano())
}
