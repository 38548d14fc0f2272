// Login protection from Go through cgo and the C ABI: 5 attempts per username per minute.
// Build flags come from pkg-config (an installed ratewarden).
package main

/*
#cgo pkg-config: ratewarden
#include <stdlib.h>
#include "ratewarden.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"unsafe"
)

// Limiter wraps an rw_limiter_t; a Go program would keep one per policy.
type Limiter struct {
	store   *C.rw_store_t
	limiter *C.rw_limiter_t
}

func takeError(status C.int, msg *C.char) error {
	defer C.rw_free(unsafe.Pointer(msg))
	return fmt.Errorf("%s: %s", C.GoString(C.rw_status_str(status)), C.GoString(msg))
}

// NewLimiter applies policy ("5/minute", ...) with algorithm ("fixed_window", "gcra", ...) on the store at url.
func NewLimiter(url, policy, algorithm string) (*Limiter, error) {
	curl, cpolicy, calgorithm := C.CString(url), C.CString(policy), C.CString(algorithm)
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(cpolicy))
	defer C.free(unsafe.Pointer(calgorithm))
	options := C.rw_options_create()
	defer C.rw_options_destroy(options)
	C.rw_options_set_algorithm(options, calgorithm)
	var l Limiter
	var msg *C.char
	if st := C.rw_store_open(curl, &l.store, &msg); st != C.RW_OK {
		return nil, takeError(st, msg)
	}
	if st := C.rw_limiter_create(l.store, cpolicy, options, &l.limiter, &msg); st != C.RW_OK {
		C.rw_store_close(l.store)
		return nil, takeError(st, msg)
	}
	return &l, nil
}

func (l *Limiter) Close() {
	C.rw_limiter_destroy(l.limiter)
	C.rw_store_close(l.store)
}

// Hit consumes one attempt for key; the decision's durations are in microseconds.
func (l *Limiter) Hit(key string) (C.rw_decision_t, error) { return l.decide(key, true) }

// Peek tells what Hit would decide, consuming nothing.
func (l *Limiter) Peek(key string) (C.rw_decision_t, error) { return l.decide(key, false) }

func (l *Limiter) decide(key string, hit bool) (C.rw_decision_t, error) {
	var d C.rw_decision_t
	var msg *C.char
	ckey := C.CBytes([]byte(key))
	defer C.free(ckey)
	var st C.int
	if hit {
		st = C.rw_hit(l.limiter, (*C.char)(ckey), C.size_t(len(key)), 1, &d, &msg)
	} else {
		st = C.rw_peek(l.limiter, (*C.char)(ckey), C.size_t(len(key)), 1, &d, &msg)
	}
	if st != C.RW_OK {
		return d, takeError(st, msg)
	}
	return d, nil
}

// Usage: go run . [store-url]        the login example
//        go run . fleet hit|peek ...  one member of the polyglot fleet test (fleet.go)
func main() {
	if len(os.Args) > 1 && os.Args[1] == "fleet" {
		os.Exit(fleet(os.Args[2:]))
	}
	url := "memory://"
	if len(os.Args) > 1 {
		url = os.Args[1]
	}
	l, err := NewLimiter(url, "5/minute", "fixed_window")
	if err != nil {
		fmt.Fprintln(os.Stderr, "login:", err)
		os.Exit(1)
	}
	defer l.Close()
	// Bad input is an error value with the library's message, never a crash.
	if _, err := NewLimiter(url, "5/fortnight", "fixed_window"); err == nil || !strings.Contains(err.Error(), `unknown unit "fortnight"`) {
		fmt.Fprintln(os.Stderr, "login: a bad policy was not reported:", err)
		os.Exit(1)
	}
	fmt.Printf("ratewarden %s from Go\n", C.GoString(C.rw_version()))
	fmt.Printf("%-8s %-8s %-8s %-10s %s\n", "attempt", "user", "status", "remaining", "retry-after")
	for i, user := range []string{"alice", "alice", "alice", "alice", "alice", "alice", "bob"} {
		d, err := l.Hit("login:" + user)
		if err != nil {
			fmt.Fprintln(os.Stderr, "login:", err)
			os.Exit(1)
		}
		status, retry := "200", "-"
		if d.allowed == 0 {
			// Retry-After in whole seconds, rounded up.
			status, retry = "429", fmt.Sprintf("%d s", (int64(d.retry_after_us)+999999)/1000000)
		}
		fmt.Printf("%-8d %-8s %-8s %-10d %s\n", i+1, user, status, int64(d.remaining), retry)
	}
}
