//! governor, the speed anchor of issue 21: its keyed GCRA limiter (`check_key`, a DashMap keyed by `String` with
//! std's SipHash-1-3 `RandomState`) and its unkeyed one, timed on the cases of bench/memory_store_bench.cpp.
//!
//! Prints one JSON line per case: {"bench":"governor","case":...,"ns":<median ns per call>,"rounds":N}.
//! `--rounds N` (default 5): each round runs long enough to take at least 0.3 s; bench/in_process.sh runs one round
//! per process, interleaved with the C++ bench's rounds, and takes the medians itself. Time is the process's CPU
//! time, as Google Benchmark measures the single-threaded C++ cases: on a shared machine, time spent waiting for a
//! core is nobody's cost.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::{Quota, RateLimiter};

const MIN_ROUND: Duration = Duration::from_millis(300);
const DISTINCT_KEYS: u64 = 1_000_000;

/// The C++ bench's keys: "user:" + (i * 7919 % 10000019).
fn distinct_keys() -> Vec<String> {
    (0..DISTINCT_KEYS).map(|i| format!("user:{}", i * 7919 % 10_000_019)).collect()
}

/// High enough never to deny: every call takes the same (allowed) path, as in the C++ cases.
fn quota() -> Quota {
    Quota::per_minute(NonZeroU32::new(1_000_000_000).unwrap())
}

/// `--calls N`: N hot-key checks and nothing else, for bench/in_process.sh to count under callgrind (the
/// difference between N and 2N calls, over N, is one check's instructions: start-up cancels out).
fn hot_key_calls(n: u64) {
    let keyed = RateLimiter::keyed(quota());
    let hot = String::from("user:42");
    let allowed = (0..n).filter(|_| keyed.check_key(black_box(&hot)).is_ok()).count() as u64;
    assert_eq!(allowed, n, "the quota is too high for a denial");
}

fn cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec it is given.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_PROCESS_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU ns per call of `step`: the count of calls doubles until one run takes ≥ MIN_ROUND.
fn time_round(mut step: impl FnMut()) -> f64 {
    let mut n: u64 = 1 << 16;
    loop {
        let start = cpu_time();
        for _ in 0..n {
            step();
        }
        let elapsed = cpu_time() - start;
        if elapsed >= MIN_ROUND {
            return elapsed.as_nanos() as f64 / n as f64;
        }
        n *= 2;
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] } else { (v[m - 1] + v[m]) / 2.0 }
}

fn report(case: &str, rounds: usize, mut round: impl FnMut() -> f64) {
    let ns = median((0..rounds).map(|_| round()).collect());
    println!("{{\"bench\":\"governor\",\"case\":\"{case}\",\"ns\":{ns:.2},\"rounds\":{rounds}}}");
}

enum Run {
    Rounds(usize),
    Calls(u64),
}

fn run_from_args() -> Run {
    let args: Vec<String> = std::env::args().collect();
    let count = |n: &String| n.parse().ok().filter(|&n| n > 0).unwrap_or_else(|| usage());
    match args.as_slice() {
        [_] => Run::Rounds(5),
        [_, flag, n] if flag == "--rounds" => Run::Rounds(count(n) as usize),
        [_, flag, n] if flag == "--calls" => Run::Calls(count(n)),
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!("usage: governor-peer [--rounds N | --calls N]");
    std::process::exit(2)
}

fn main() {
    let rounds = match run_from_args() {
        Run::Rounds(rounds) => rounds,
        Run::Calls(n) => return hot_key_calls(n),
    };

    // (a) One hot key through the keyed limiter.
    let keyed = RateLimiter::keyed(quota());
    let hot = String::from("user:42");
    report("keyed_hot_key", rounds, || time_round(|| {
        black_box(keyed.check_key(black_box(&hot)).is_ok());
    }));

    // (b) 1,000,000 distinct keys cycled, in a limiter that already holds them all (the steady state the C++
    // cases measure too). governor never drops a key unless told to (retain_recent), so there is no eviction.
    let keys = distinct_keys();
    let many = RateLimiter::keyed(quota());
    for k in &keys {
        black_box(many.check_key(k).is_ok());
    }
    let mut next = 0usize;
    report("keyed_distinct_keys", rounds, || time_round(|| {
        black_box(many.check_key(&keys[next]).is_ok());
        next += 1;
        if next == keys.len() {
            next = 0;
        }
    }));

    // (c) The unkeyed limiter: one state, no hashing (for information).
    let direct = RateLimiter::direct(quota());
    report("direct", rounds, || time_round(|| {
        black_box(direct.check().is_ok());
    }));
}
