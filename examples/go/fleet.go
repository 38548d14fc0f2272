package main

import (
	"fmt"
	"os"
	"strconv"
)

// fleet runs one member of the polyglot fleet test (tests/polyglot): `hit URL ALGORITHM POLICY KEY N` prints how
// many of N hits were allowed; `peek URL ALGORITHM POLICY KEY` prints what remains. Returns the exit code.
func fleet(args []string) int {
	if len(args) < 5 || (args[0] == "hit" && len(args) != 6) {
		fmt.Fprintln(os.Stderr, "usage: fleet hit|peek URL ALGORITHM POLICY KEY [N]")
		return 2
	}
	l, err := NewLimiter(args[1], args[3], args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		return 1
	}
	defer l.Close()
	key := args[4]
	if args[0] == "peek" {
		d, err := l.Peek(key)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fleet:", err)
			return 1
		}
		fmt.Println(int64(d.remaining))
		return 0
	}
	n, _ := strconv.Atoi(args[5])
	allowed := 0
	for i := 0; i < n; i++ {
		d, err := l.Hit(key)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fleet:", err)
			return 1
		}
		allowed += int(d.allowed)
	}
	fmt.Println(allowed)
	return 0
}
